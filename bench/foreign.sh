#!/usr/bin/env bash
# Foreign images (issue 41): importing ext4, squashfs and ISO 9660 images into ddfs without
# mounting them, against the tools users reach for, and exporting a ddfs tree as squashfs
# against mksquashfs. Two trees: D1 (a copy of /usr/local/go) and 100k small files
# (`gen small`). Per tree, the foreign images are made once with their own tools
# (mke2fs -d, mksquashfs, xorriso -as mkisofs -R -J); then, interleaved, RUNS times:
#   ext4      mkfs.ddfs -r tree.ext4 out.img
#             vs mount -o loop,ro + mkfs.ddfs -r MOUNT out.img + umount (the old way)
#             vs debugfs -R 'rdump / DIR' tree.ext4 (a copy out, no ddfs image at all)
#   squashfs  mkfs.ddfs -r tree.sqfs out.img   vs unsquashfs -d DIR tree.sqfs
#   iso9660   mkfs.ddfs -r tree.iso out.img    vs xorriso -osirrox on -indev tree.iso -extract / DIR
#   export    ddfs export out.img:/ x.sqfs --type squashfs   vs mksquashfs TREE y.sqfs
# Medians of RUNS; max RSS is the worst run's. Every output lands on the same disk (TMPDIR).
# Needs root for the loop mount (that row is skipped with a note otherwise).
#
# Environment: BIN (bin), D1 (/usr/local/go), RUNS (3), SMALL (100000 files), TMPDIR (/tmp).
# Output: the table on stdout and in bench/results/foreign-latest.txt.
set -euo pipefail
export LC_ALL=C PATH="$PATH:/usr/sbin:/sbin"
BIN=${BIN:-bin}
D1=${D1:-/usr/local/go}
RUNS=${RUNS:-3}
SMALL=${SMALL:-100000}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=$(cd "$BIN" && pwd)
root=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-foreign.XXXXXX")
cleanup() {
	mountpoint -q "$root/mnt" 2>/dev/null && umount "$root/mnt"
	rm -rf "$root"
}
trap cleanup EXIT
note() { echo "  note: $*"; }
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
# timed NAME CMD...: wall seconds to t-NAME, max RSS (KiB) to m-NAME; $root/out* cleared first.
timed() {
	local n=$1 t0 t1
	shift
	rm -rf "$root"/out*
	sync
	t0=$(now)
	/usr/bin/time -a -o "$root/m-$n" -f %M bash -c "$*"
	t1=$(now)
	echo "$t1 - $t0" | bc >>"$root/t-$n"
}
out=$HERE/results/foreign-latest.txt
mkdir -p "$HERE/results"
exec > >(tee "$out")

for tool in mke2fs debugfs mksquashfs unsquashfs xorriso; do
	command -v "$tool" >/dev/null || { echo "foreign.sh: $tool is missing" >&2; exit 1; }
done
go build -o "$root/gen" ./bench/gen
cp -a "$D1" "$root/go"
"$root/gen" small -dirs $((SMALL / 1000)) -files 1000 -max 2048 - | tar -x -C "$root" --one-top-level=small -f -
mount_ok=0
[[ $(id -u) -eq 0 ]] && mkdir -p "$root/mnt" && mount_ok=1
[[ $mount_ok -eq 1 ]] || note "loop-mount row skipped (needs root)"
echo "# foreign image benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, runs=$RUNS, load $(cut -d' ' -f1-3 /proc/loadavg)"

for tree in go small; do
	src=$root/$tree
	files=$(find "$src" -type f | wc -l)
	kib=$(du -sk "$src" | cut -f1)
	size=$((kib * 2 / 1024 + 512))M # room for the ddfs copies
	inodes=$((files + files / 2 + 10000))
	mke2fs -q -t ext4 -N "$inodes" -d "$src" "$root/$tree.ext4" $((kib * 3 / 2 / 1024 + 256))M >/dev/null
	mksquashfs "$src" "$root/$tree.sqfs" -noappend -quiet >/dev/null
	xorriso -as mkisofs -quiet -R -J -o "$root/$tree.iso" "$src" 2>/dev/null
	echo "# $tree: $files files, $((kib / 1024)) MiB"
	"$BIN/mkfs.ddfs" -q -b "$size" -r "$src" "$root/$tree.ddfs"
	# Export reads its image back and refuses one that differs: that would be
	# reported, not timed.
	export_ok=1
	if ! "$BIN/ddfs" export "$root/$tree.ddfs:/" "$root/probe.sqfs" --type squashfs 2>"$root/export-$tree.err" >/dev/null; then
		export_ok=0
	fi
	rm -f "$root/probe.sqfs"
	for r in $(seq "$RUNS"); do
		timed "$tree-ext4-ddfs" "'$BIN/mkfs.ddfs' -q -b $size -r '$root/$tree.ext4' '$root/out.img'"
		if [[ $mount_ok -eq 1 ]]; then
			timed "$tree-ext4-mount" "mount -o loop,ro '$root/$tree.ext4' '$root/mnt' && '$BIN/mkfs.ddfs' -q -b $size -r '$root/mnt' '$root/out.img'; umount '$root/mnt'"
		fi
		timed "$tree-ext4-debugfs" "mkdir '$root/out' && debugfs -R 'rdump / $root/out' '$root/$tree.ext4' >/dev/null 2>&1"
		timed "$tree-sqfs-ddfs" "'$BIN/mkfs.ddfs' -q -b $size -r '$root/$tree.sqfs' '$root/out.img'"
		timed "$tree-sqfs-unsquashfs" "unsquashfs -q -n -d '$root/out' '$root/$tree.sqfs' >/dev/null"
		timed "$tree-iso-ddfs" "'$BIN/mkfs.ddfs' -q -b $size -r '$root/$tree.iso' '$root/out.img'"
		timed "$tree-iso-xorriso" "xorriso -osirrox on -indev '$root/$tree.iso' -extract / '$root/out' >/dev/null 2>&1"
		[[ $export_ok -eq 1 ]] && timed "$tree-export-ddfs" "'$BIN/ddfs' export '$root/$tree.ddfs:/' '$root/out.sqfs' --type squashfs >/dev/null"
		timed "$tree-export-mksquashfs" "mksquashfs '$src' '$root/out.sqfs' -noappend -quiet >/dev/null"
	done
done
echo "# load average after the runs: $(cut -d' ' -f1-3 /proc/loadavg)"

printf '%-52s %9s %12s\n' run seconds "max RSS KiB"
row() { # row LABEL NAME
	[[ -s "$root/t-$2" ]] || return 0
	printf '%-52s %9.3f %12d\n' "$1" "$(median <"$root/t-$2")" "$(sort -n "$root/m-$2" | tail -1)"
}
ratio() { [[ -s "$root/t-$1" && -s "$root/t-$2" ]] && echo "scale=2; $(median <"$root/t-$1") / $(median <"$root/t-$2")" | bc; }
for tree in go small; do
	row "$tree: mkfs.ddfs -r tree.ext4" "$tree-ext4-ddfs"
	row "$tree: mount -o loop,ro + mkfs.ddfs -r + umount" "$tree-ext4-mount"
	row "$tree: debugfs -R 'rdump / DIR'" "$tree-ext4-debugfs"
	row "$tree: mkfs.ddfs -r tree.sqfs" "$tree-sqfs-ddfs"
	row "$tree: unsquashfs -d DIR" "$tree-sqfs-unsquashfs"
	row "$tree: mkfs.ddfs -r tree.iso" "$tree-iso-ddfs"
	row "$tree: xorriso -osirrox on -extract" "$tree-iso-xorriso"
	row "$tree: ddfs export --type squashfs" "$tree-export-ddfs"
	if [[ -s "$root/export-$tree.err" ]]; then
		printf '%-52s %s\n' "$tree: ddfs export --type squashfs" "refused: $(cut -c1-150 "$root/export-$tree.err" | head -1)"
	fi
	row "$tree: mksquashfs" "$tree-export-mksquashfs"
done
for tree in go small; do
	if [[ $mount_ok -eq 1 ]]; then
		echo "  -> $tree: ext4 import / loop mount + mkfs -r = $(ratio "$tree-ext4-ddfs" "$tree-ext4-mount")x (target <= 1.0)"
	fi
	echo "  -> $tree: ext4 import / debugfs rdump = $(ratio "$tree-ext4-ddfs" "$tree-ext4-debugfs")x (target < 1.0)"
	echo "  -> $tree: squashfs import / unsquashfs = $(ratio "$tree-sqfs-ddfs" "$tree-sqfs-unsquashfs")x"
	echo "  -> $tree: iso import / xorriso extract = $(ratio "$tree-iso-ddfs" "$tree-iso-xorriso")x"
	if [[ -s "$root/t-$tree-export-ddfs" ]]; then
		echo "  -> $tree: ddfs export / mksquashfs = $(ratio "$tree-export-ddfs" "$tree-export-mksquashfs")x"
	fi
done
exit 0
