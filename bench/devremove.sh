#!/usr/bin/env bash
# bench/devremove.sh — `ddfs device remove` of a device holding SIZE of data
# (issue 11) vs `btrfs device remove` on loop devices with the same data.
#
# For each tool: a filesystem on loop device A (data single, metadata dup),
# FILES files of seeded random bytes totalling SIZE copied in, an empty loop
# device B added, the page cache dropped, then the timed step: remove A
# (every chunk moves to B) and sync. ddfs runs on the loop devices directly
# (no mount); btrfs is mounted. RUNS interleaved runs (ddfs, btrfs, ddfs,
# ...), medians, ratio btrfs/ddfs (> 1: ddfs faster). Afterwards each
# filesystem is checked (fsck.ddfs, btrfs check) and one file compared.
# Needs root and losetup; btrfs-progs is installed with apt-get if missing.
set -euo pipefail
# A failing step inside $(run_ddfs) must stop that run (and then the
# script, through the trap below), not go on with the next command.
shopt -s inherit_errexit
BIN=${BIN:-bin}
SIZE=${SIZE:-2G}
FILES=${FILES:-8}
RUNS=${RUNS:-3}
OUT=${OUT:-bench/results/devremove-latest.txt}
if [[ $(id -u) -ne 0 ]] || ! command -v losetup >/dev/null; then
	echo "devremove.sh: skipped (needs root and losetup)"
	exit 0
fi
if ! command -v mkfs.btrfs >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends btrfs-progs >/dev/null 2>&1 || true
fi
W=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-devrm.XXXXXX")
# cleanup unmounts and detaches every loop device backed by an image in
# $W. The runs attach them in $(...) subshells, whose variables the trap
# never sees, so the devices are found by their backing files.
cleanup() {
	local img l
	if mountpoint -q "$W/mnt" 2>/dev/null; then
		umount "$W/mnt" 2>/dev/null || umount -l "$W/mnt" 2>/dev/null || true
	fi
	for img in "$W/a.img" "$W/b.img"; do
		[[ -e $img ]] || continue
		for l in $(losetup -l -n -O NAME -j "$img" 2>/dev/null); do
			losetup -d "$l" 2>/dev/null || true
		done
	done
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
bytes=$(numfmt --from=iec "$SIZE")
devsize=$((bytes * 2 + (1 << 30)))
go build -o "$W/gen" ./bench/gen
"$W/gen" big -seed 11 -n "$FILES" -size $((bytes / FILES)) "$W/src" >/dev/null
srcfiles=("$W"/src/*)
first=${srcfiles[0]##*/} # the file compared after each remove
mkdir -p "$W/mnt"

# pair makes two fresh loop devices of devsize bytes: A and B.
pair() {
	rm -f "$W/a.img" "$W/b.img"
	truncate -s "$devsize" "$W/a.img" "$W/b.img"
	A=$(losetup -f --show "$W/a.img")
	B=$(losetup -f --show "$W/b.img")
}
unpair() {
	losetup -d "$A" "$B"
	rm -f "$W/a.img" "$W/b.img"
}
timed() { # run the command, then sync; print wall seconds
	sync
	{ echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null || echo "devremove.sh: cannot drop the page cache; timing warm" >&2
	local t0 t1
	t0=$(now)
	"$@" >/dev/null
	sync
	t1=$(now)
	echo "$t1 - $t0" | bc
}

run_ddfs() {
	pair
	"$BIN/mkfs.ddfs" -q -f -d single -m dup "$A"
	"$BIN/ddfs" cp -r "$W/src" "$A:/"
	"$BIN/ddfs" device add -f "$A" "$B" >/dev/null
	local s
	s=$(timed "$BIN/ddfs" device remove --device "$B" "$A" "$A")
	"$BIN/fsck.ddfs" -q "$B" >/dev/null || { echo "fsck.ddfs failed after remove" >&2; exit 1; }
	"$BIN/ddfs" cat "$B:/src/$first" | cmp -s - "$W/src/$first" || { echo "ddfs: file differs after remove" >&2; exit 1; }
	unpair
	echo "$s"
}

run_btrfs() {
	pair
	mkfs.btrfs -q -f -d single -m dup "$A" >/dev/null
	mount "$A" "$W/mnt"
	cp -r "$W/src" "$W/mnt/"
	btrfs device add -f "$B" "$W/mnt" >/dev/null
	sync
	local s
	s=$(timed btrfs device remove "$A" "$W/mnt")
	cmp -s "$W/mnt/src/$first" "$W/src/$first" || { echo "btrfs: file differs after remove" >&2; exit 1; }
	umount "$W/mnt"
	btrfs check --readonly "$B" >/dev/null 2>&1 || { echo "btrfs check failed after remove" >&2; exit 1; }
	unpair
	echo "$s"
}

have_btrfs=1
command -v mkfs.btrfs >/dev/null && grep -qw btrfs /proc/filesystems 2>/dev/null || modprobe btrfs 2>/dev/null || true
command -v mkfs.btrfs >/dev/null && grep -qw btrfs /proc/filesystems || have_btrfs=0
D=()
T=()
for ((i = 0; i < RUNS; i++)); do
	D+=("$(run_ddfs)")
	[[ $have_btrfs -eq 1 ]] && T+=("$(run_btrfs)")
done
d=$(printf '%s\n' "${D[@]}" | median)
{
	echo "# device remove, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores: a device holding $SIZE ($FILES files) moved to an empty one; medians of $RUNS interleaved runs, cold cache, incl. sync; load average $(cut -d' ' -f1-3 /proc/loadavg)"
	printf '%-24s %10s %10s %12s\n' tool "seconds" "MiB/s" "runs"
	printf '%-24s %10.2f %10.0f %12s\n' "ddfs device remove" "$d" "$(echo "$bytes / 1048576 / $d" | bc -l)" "$(echo "${D[*]}" | tr ' ' ,)"
	if [[ $have_btrfs -eq 1 ]]; then
		t=$(printf '%s\n' "${T[@]}" | median)
		printf '%-24s %10.2f %10.0f %12s\n' "btrfs device remove" "$t" "$(echo "$bytes / 1048576 / $t" | bc -l)" "$(echo "${T[*]}" | tr ' ' ,)"
		printf 'ratio btrfs/ddfs: %.2fx\n' "$(echo "$t / $d" | bc -l)"
	else
		echo "  note: btrfs not available (btrfs-progs or the kernel module missing): peer skipped"
	fi
} | tee "$OUT"
