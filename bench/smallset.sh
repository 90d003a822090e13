# bench/smallset.sh, sourced by the files*.sh scripts: scale.sh's small-file sets.
# smallset GEN N DIR makes N files in DIR (bench/gen small: 1000 a folder, 0-8 KiB, nested
# 100 deep) and prints an image size that holds them (3x their apparent bytes + 1 GiB).
smallset() {
	local dirs=$((($2 + 999) / 1000))
	rm -rf "$3" && "$1" small -dirs "$dirs" -files $(($2 / dirs)) -max 8192 -nest 100 "$3" >/dev/null
	echo "$(($(du -sk --apparent-size "$3" | cut -f1) * 3 / 1024 + 1024))M"
}
