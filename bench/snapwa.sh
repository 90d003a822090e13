#!/usr/bin/env bash
# Write amplification of 4 KiB random overwrites right after a snapshot (issue 39), against
# the same overwrites with no snapshot, for ddfs and btrfs on loop devices of one size:
# bench/randwrite fills a SIZE file, syncs, takes (or not) a snapshot, then makes WRITES
# random 4 KiB overwrites, syncing every c writes for each c in COMMITS (fsys.Fsync, what
# fsync(2) on a mount does; fdatasync on btrfs). Device
# bytes are the loop device's sectors written over the random phase (/sys/block/loopN/stat:
# every metadata write counted), amplification = device bytes / bytes overwritten. A fresh
# filesystem for every run; runs interleaved (ddfs, btrfs; no snapshot, snapshot), medians.
# Needs root, losetup and the kernel's btrfs; without them the btrfs rows are skipped.
#
# Environment: BIN (bin), SIZE (256M), WRITES (2000), COMMITS ("1 100"), RUNS (3), TMPDIR.
# Output: the table on stdout and in bench/results/snapwa-latest.txt.
set -euo pipefail
export LC_ALL=C PATH="$PATH:/usr/sbin:/sbin"
BIN=${BIN:-bin}
SIZE=${SIZE:-256M}
WRITES=${WRITES:-2000}
COMMITS=${COMMITS:-1 100}
RUNS=${RUNS:-3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=$(cd "$BIN" && pwd)
root=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-snapwa.XXXXXX")
mnt=$root/mnt
loop=""
release() {
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	[[ -n $loop ]] && losetup -d "$loop" 2>/dev/null
	loop=""
	return 0
}
trap 'release; rm -rf "$root"' EXIT
mkdir -p "$mnt" "$HERE/results"
(cd "$HERE/.." && go build -o "$root/randwrite" ./bench/randwrite)
exec > >(tee "$HERE/results/snapwa-latest.txt")

if [[ $(id -u) -ne 0 ]] || ! command -v losetup >/dev/null; then
	echo "snapwa: needs root and losetup (loop devices)" >&2
	exit 1
fi
btrfsok=0
command -v mkfs.btrfs >/dev/null && grep -qw btrfs /proc/filesystems && btrfsok=1

# fresh: a blank 2 GiB image on a new loop device.
fresh() {
	release
	rm -f "$root/dev.img"
	truncate -s 2G "$root/dev.img"
	loop=$(losetup -f --show "$root/dev.img")
}
stat_of() { echo "/sys/block/$(basename "$loop")/stat"; }
# one FS SNAP C: one run syncing every C writes; appends its amplification
# and seconds to $root/a-FS-SNAP-C and $root/t-FS-SNAP-C.
one() {
	local fs=$1 snap=$2 c=$3 out
	local args=(-size "$SIZE" -writes "$WRITES" -commit "$c")
	fresh
	if [[ $fs == ddfs ]]; then
		"$BIN/mkfs.ddfs" -q -f "$loop"
		local s=()
		[[ $snap == yes ]] && s=(-snapshot before)
		out=$("$root/randwrite" -img "$loop" -fsync "${args[@]}" -devstat "$(stat_of)" "${s[@]}")
	else
		mkfs.btrfs -q -f "$loop" >/dev/null && mount "$loop" "$mnt"
		local b=()
		[[ $snap == yes ]] && b=(-before "btrfs subvolume snapshot -r '$mnt' '$mnt/before' >/dev/null")
		out=$("$root/randwrite" -plain "$mnt/f" "${args[@]}" -devstat "$(stat_of)" "${b[@]}")
	fi
	echo "$out" | sed 's/.*"amplification":\([0-9.e+-]*\).*/\1/' >>"$root/a-$fs-$snap-$c"
	echo "$out" | sed 's/.*"seconds":\([0-9.e+-]*\).*/\1/' >>"$root/t-$fs-$snap-$c"
	release
}

fss="ddfs"
[[ $btrfsok -eq 1 ]] && fss="ddfs btrfs"
for r in $(seq "$RUNS"); do
	for c in $COMMITS; do
		for fs in $fss; do
			for snap in no yes; do one "$fs" "$snap" "$c"; done
		done
	done
done

median() { sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
med() { [[ -s $root/$1 ]] && median <"$root/$1" || echo ""; }
echo "# snapshot write amplification, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $WRITES random 4 KiB overwrites of a $SIZE file; runs=$RUNS (medians); device bytes from the loop device's stat"
[[ $btrfsok -eq 1 ]] || echo "  note: btrfs rows skipped (no mkfs.btrfs or no btrfs in the kernel)"
ratio() { echo "scale=2; $1 / $2" | bc | sed 's/^\./0./'; }
printf '%-8s %-12s %-10s %14s %10s\n' fs "sync every" snapshot amplification seconds
for c in $COMMITS; do
	for fs in $fss; do
		for snap in no yes; do
			printf '%-8s %-12s %-10s %14.2f %10.3f\n' "$fs" "$c" "$snap" "$(med "a-$fs-$snap-$c")" "$(med "t-$fs-$snap-$c")"
		done
	done
done
for c in $COMMITS; do
	for fs in $fss; do
		echo "  -> sync every $c, $fs: a snapshot first costs $(ratio "$(med "a-$fs-yes-$c")" "$(med "a-$fs-no-$c")")x the amplification without one"
	done
	if [[ $btrfsok -eq 1 ]]; then
		for snap in no yes; do
			echo "  -> sync every $c, snapshot $snap: ddfs/btrfs amplification = $(ratio "$(med "a-ddfs-$snap-$c")" "$(med "a-btrfs-$snap-$c")")x"
		done
	fi
done
