#!/usr/bin/env bash
# bench/batch.sh — batch runs over many small images (issue 18):
#   1. check: fsck.ddfs -j J over all images vs a shell loop of e2fsck -fn over
#      ext4 images and of btrfs check --readonly over btrfs images of the same tree
#   2. trim: trimtool -j J over all vs a loop of mount -o loop + fstrim + umount
#      of each ext4 image (every image file fully allocated first, fallocate)
# Wall time, images per second, ratios and the worst peak RSS of any one
# process (/usr/bin/time %M: the largest child of the run).
#
# Environment:
#   BIN    directory with mkfs.ddfs, fsck.ddfs, trimtool (default: bin)
#   N      images (default: 1000)
#   FILES  files per image (default: 300, 0-8 KiB each, in 10 folders)
#   J      jobs of the batch runs (default: 2)
# Needs root for the fstrim row (loop mounts); rows whose tools are missing
# are skipped. Output: a table on stdout, also in bench/results/batch-latest.txt.
set -euo pipefail
export LC_ALL=C PATH="$PATH:/usr/sbin:/sbin"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=$(cd "${BIN:-$ROOT/bin}" && pwd)
N=${N:-1000}
FILES=${FILES:-300}
J=${J:-2}
W=$(mktemp -d "${TMPDIR:-/tmp}/batchbench.XXXXXX")
cleanup() {
	mountpoint -q "$W/mnt" 2>/dev/null && umount "$W/mnt"
	rm -rf "$W"
}
trap cleanup EXIT

for t in mkfs.ddfs fsck.ddfs trimtool; do [[ -x "$BIN/$t" ]] || { echo "bench: $BIN/$t missing (make build)" >&2; exit 1; }; done

# One tree of FILES small files, the same in every image.
mkdir -p "$W/tree"
for ((f = 0; f < FILES; f++)); do
	d="$W/tree/d$((f % 10))"
	mkdir -p "$d"
	head -c $(((f * 2654435761) % 8192)) /dev/urandom >"$d/f$f"
done

have_ext4=0 have_btrfs=0 have_loop=0
command -v mke2fs >/dev/null && have_ext4=1
command -v mkfs.btrfs >/dev/null && command -v btrfs >/dev/null && have_btrfs=1
mkdir -p "$W/ddfs" "$W/ext4" "$W/btrfs" "$W/mnt"
for ((i = 0; i < N; i++)); do
	img=$(printf 'i%04d.img' "$i")
	fallocate -l 64M "$W/ddfs/$img"
	"$BIN/mkfs.ddfs" -q -r "$W/tree" "$W/ddfs/$img"
	if [[ $have_ext4 == 1 ]]; then
		fallocate -l 64M "$W/ext4/$img"
		mke2fs -q -F -t ext4 -d "$W/tree" "$W/ext4/$img" >/dev/null 2>&1 || have_ext4=0
	fi
	if [[ $have_btrfs == 1 ]]; then
		truncate -s 128M "$W/btrfs/$img" # btrfs's minimum is above 64 MiB
		mkfs.btrfs -q -r "$W/tree" "$W/btrfs/$img" >/dev/null 2>&1 || have_btrfs=0
	fi
done
find "$W/ddfs" -name '*.img' | sort >"$W/list"
if [[ $have_ext4 == 1 && $(id -u) == 0 ]] && mount -o loop "$W/ext4/i0000.img" "$W/mnt" 2>/dev/null; then
	umount "$W/mnt" && have_loop=1
fi

# measure CMD...: "seconds MiB"; exit status ignored (a check that finds
# problems still ran); the command's stdout stays in $W/out for checks.
measure() {
	/usr/bin/time -f "%e %M" -o "$W/t" "$@" >"$W/out" 2>/dev/null || true
	tail -n 1 "$W/t" | awk '{printf "%.2f %.0f", $1, $2/1024}'
}
# checked NAME: the ddfs run just measured reported every image (one JSON
# line each, exit 0 in every one), so its figure is of work done.
checked() {
	local n
	n=$(grep -c '"exit": *0' "$W/out" || true)
	[[ $n == "$N" ]] || { echo "bench: $1 reported $n of $N sets clean" >&2; exit 1; }
}
e2fsck_loop() { for f in "$W"/ext4/*.img; do e2fsck -fn "$f" >/dev/null 2>&1 || true; done; }
btrfs_loop() { for f in "$W"/btrfs/*.img; do btrfs check --readonly "$f" >/dev/null 2>&1 || true; done; }
fstrim_loop() {
	for f in "$W"/ext4/*.img; do mount -o loop "$f" "$W/mnt" && fstrim "$W/mnt" && umount "$W/mnt"; done
}
export -f e2fsck_loop btrfs_loop fstrim_loop
export W

{
echo "batch bench: $N images of 64 MiB, $FILES files each, -j $J, $(nproc) cores ($(date -u +%F))"
printf '%-40s %9s %10s %9s %9s\n' "command" "seconds" "images/s" "RSS MiB" "vs ddfs"
row() { # NAME SECONDS RSS BASE
	awk -v n="$N" -v name="$1" -v s="$2" -v m="$3" -v b="$4" \
		'BEGIN { printf "%-40s %9.2f %10.1f %9d %8.2fx\n", name, s, n / (s > 0 ? s : 0.01), m, s / (b > 0 ? b : 0.01) }'
}
read -r fs fm <<<"$(measure "$BIN/fsck.ddfs" -j "$J" --json --from "$W/list")"
checked fsck.ddfs
row "fsck.ddfs -j $J --json --from list" "$fs" "$fm" "$fs"
if [[ $have_ext4 == 1 ]]; then read -r s m <<<"$(measure bash -c e2fsck_loop)"; row "loop: e2fsck -fn" "$s" "$m" "$fs"; fi
if [[ $have_btrfs == 1 ]]; then read -r s m <<<"$(measure bash -c btrfs_loop)"; row "loop: btrfs check --readonly" "$s" "$m" "$fs"; fi
read -r ts tm <<<"$(measure "$BIN/trimtool" -j "$J" --json --from "$W/list")"
checked trimtool
row "trimtool -j $J --json --from list" "$ts" "$tm" "$ts"
if [[ $have_loop == 1 ]]; then read -r s m <<<"$(measure bash -c fstrim_loop)"; row "loop: mount -o loop + fstrim + umount" "$s" "$m" "$ts"; fi
echo "(vs ddfs: the row's time over the ddfs row's above it; RSS: the largest single process)"
[[ $have_btrfs == 1 ]] || echo "(btrfs rows skipped: no btrfs-progs)"
[[ $have_loop == 1 ]] || echo "(fstrim row skipped: needs root and loop devices)"
} | tee "$HERE/results/batch-latest.txt"
