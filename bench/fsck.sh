#!/usr/bin/env bash
# bench/fsck.sh — fsck.ddfs against e2fsck -fn and btrfs check --readonly on images
# holding the same tree, in one run:
#   1. metadata check (fsck.ddfs vs e2fsck -fn vs btrfs check --readonly)
#   2. data check (fsck.ddfs --check-data vs btrfs check --check-data-csum)
#   3. repair: fsck.ddfs -y on the image with N damaged inodes (nlink) vs a clean check
# Wall time and peak RSS (/usr/bin/time), median of RUNS runs.
#
# Environment:
#   BIN     directory with mkfs.ddfs, fsck.ddfs (default: bin)
#   SRC     tree to copy in (default: $(go env GOROOT)/src)
#   COPIES  copies of SRC in the images (default: 1; the issue's D2 is 4 x GOROOT + VM files)
#   DAMAGE  inodes damaged for the repair row (default: 1000)
#   RUNS    runs per measurement (default: 3)
# Output: a table on stdout, also written to bench/results/fsck-latest.txt.
set -euo pipefail
export LC_ALL=C PATH="$PATH:/usr/sbin:/sbin"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=$(cd "${BIN:-$ROOT/bin}" && pwd)
SRC=${SRC:-$(go env GOROOT)/src}
COPIES=${COPIES:-1}
DAMAGE=${DAMAGE:-1000}
RUNS=${RUNS:-3}
W=$(mktemp -d "${TMPDIR:-/tmp}/fsckbench.XXXXXX")
trap 'rm -rf "$W"' EXIT

for t in mkfs.ddfs fsck.ddfs; do [[ -x "$BIN/$t" ]] || { echo "bench: $BIN/$t missing (make build)" >&2; exit 1; }; done
(cd "$ROOT" && go build -o "$W/fsckdamage" ./bench/fsckdamage)

mkdir "$W/tree"
for i in $(seq 1 "$COPIES"); do cp -a "$SRC" "$W/tree/c$i"; done
files=$(find "$W/tree" | wc -l)
bytes=$(du -sb "$W/tree" | cut -f1)

"$BIN/mkfs.ddfs" -q -b 8G -r "$W/tree" "$W/ddfs.img"
have_ext4=0 have_btrfs=0
if command -v mke2fs >/dev/null && mke2fs -q -t ext4 -d "$W/tree" "$W/ext4.img" 8G >/dev/null 2>&1; then have_ext4=1; fi
if command -v mkfs.btrfs >/dev/null && mkfs.btrfs -q -r "$W/tree" "$W/btrfs.img" >/dev/null 2>&1; then have_btrfs=1; fi

# measure CMD...: prints "seconds MiB" (median of RUNS by time); exit status ignored
# (a check that finds problems still counts as run).
measure() {
	local i out=()
	for ((i = 0; i < RUNS; i++)); do
		/usr/bin/time -f "%e %M" -o "$W/t" "$@" >/dev/null 2>&1 || true
		out+=("$(tail -n 1 "$W/t")") # time adds a line for a non-zero exit
	done
	printf '%s\n' "${out[@]}" | sort -n | sed -n "$(((RUNS + 1) / 2))p" | awk '{printf "%.3f %.0f", $1, $2/1024}'
}

{
echo "fsck bench: $COPIES x $(basename "$SRC"), $files files, $((bytes / 1048576)) MiB, median of $RUNS ($(date -u +%F))"
printf '%-34s %9s %9s\n' "command" "seconds" "RSS MiB"
row() { printf '%-34s %9s %9s\n' "$1" $2; }
row "fsck.ddfs" "$(measure "$BIN/fsck.ddfs" "$W/ddfs.img")"
[[ $have_ext4 == 1 ]] && row "e2fsck -fn" "$(measure e2fsck -fn "$W/ext4.img")"
[[ $have_btrfs == 1 ]] && row "btrfs check --readonly" "$(measure btrfs check --readonly "$W/btrfs.img")"
row "fsck.ddfs --check-data" "$(measure "$BIN/fsck.ddfs" --check-data "$W/ddfs.img")"
[[ $have_btrfs == 1 ]] && row "btrfs check --check-data-csum" "$(measure btrfs check --readonly --check-data-csum "$W/btrfs.img")"
# Repair: a fresh damaged copy per run.
rt=()
for ((i = 0; i < RUNS; i++)); do
	cp --sparse=always "$W/ddfs.img" "$W/dmg.img"
	"$W/fsckdamage" "$W/dmg.img" "$DAMAGE" >/dev/null
	# The copy's dirty pages would be written back by the repair's first
	# fsync and counted as repair time: write them out first.
	sync "$W/dmg.img"
	/usr/bin/time -f "%e %M" -o "$W/t" "$BIN/fsck.ddfs" -y "$W/dmg.img" >/dev/null 2>&1 || true
	rt+=("$(tail -n 1 "$W/t")")
	"$BIN/fsck.ddfs" "$W/dmg.img" >/dev/null || echo "note: the image is not clean after -y" >&2
done
row "fsck.ddfs -y ($DAMAGE damaged inodes)" "$(printf '%s\n' "${rt[@]}" | sort -n | sed -n "$(((RUNS + 1) / 2))p" | awk '{printf "%.3f %.0f", $1, $2/1024}')"
} | tee "$HERE/results/fsck-latest.txt"
