#!/usr/bin/env bash
# bench/tiered-loop.sh — wall time on really slow devices (issue 6): 2 loop
# devices as "SSDs" and 2 loop devices as "HDDs" whose reads a blkio cgroup
# throttles to HDD speed (150 requests/s, 150 MB/s). FILES small files are
# copied in (unthrottled), the page cache is dropped, then metadata-heavy
# cold reads run inside the cgroup: `ddfs du` (every inode), `fsck.ddfs`
# (every node), `ddfs ls -lR`. classic vs ssd-metadata vs tiered, ratios
# against classic. Needs root, losetup and cgroup v1 blkio (skips otherwise).
set -euo pipefail
BIN=${BIN:-bin}
FILES=${FILES:-20000}
IOPS=${IOPS:-150}
BPS=${BPS:-150000000}
CG=/sys/fs/cgroup/blkio/ddfs-bench
if [[ $(id -u) -ne 0 ]] || ! command -v losetup >/dev/null || [[ ! -d /sys/fs/cgroup/blkio ]]; then
	echo "tiered-loop.sh: skipped (needs root, losetup and cgroup v1 blkio)"
	exit 0
fi
W=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-tloop.XXXXXX")
LOOPS=()
cleanup() {
	for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null || true; done
	rmdir "$CG" 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT
go build -o "$W/gen" ./bench/gen
"$W/gen" small -seed 1 -dirs $((FILES / 1000)) -files 1000 -max 4096 "$W/src" >/dev/null
mkdir -p "$CG"
now() { date +%s.%N; }
throttled() { # run a command inside the cgroup, print its wall seconds
	sync; echo 3 >/proc/sys/vm/drop_caches
	local t0 t1
	t0=$(now)
	bash -c 'echo $$ >'"$CG"'/tasks; exec "$@"' _ "$@" >/dev/null
	t1=$(now)
	echo "$t1 - $t0" | bc
}
echo "# slow-device wall time, $(date -u '+%Y-%m-%d %H:%M UTC'): $FILES files; HDD loops throttled to $IOPS reads/s, $((BPS / 1000000)) MB/s"
printf '%-14s %10s %10s %10s %10s\n' policy "du s" "fsck s" "ls -lR s" "vs classic"
declare -A TOTAL
for policy in classic ssd-metadata tiered; do
	devs=()
	for n in s0 s1 h0 h1; do
		# HDDs bigger than SSDs, as usual: classic's most-free-space rule
		# then puts metadata on them.
		size=4G
		[[ $n == h* ]] && size=16G
		truncate -s "$size" "$W/$policy-$n.img"
		l=$(losetup -f --show "$W/$policy-$n.img")
		LOOPS+=("$l")
		devs+=("$l")
	done
	hdd="rotational=1,seek_speed=120,bandwidth=150M"
	for l in "${devs[@]:2}"; do
		mm=$(lsblk -dno MAJ:MIN "$l" | tr -d ' ')
		echo "$mm $IOPS" >"$CG/blkio.throttle.read_iops_device"
		echo "$mm $BPS" >"$CG/blkio.throttle.read_bps_device"
	done
	"$BIN/mkfs.ddfs" -q -f -d raid1 -m raid1 --alloc-policy "$policy" \
		"${devs[0]}:rotational=0" "${devs[1]}:rotational=0" "${devs[2]}:$hdd" "${devs[3]}:$hdd"
	more=(--device "${devs[1]}" --device "${devs[2]}" --device "${devs[3]}")
	"$BIN/ddfs" cp -r "${more[@]}" "$W/src" "${devs[0]}:/"
	du_s=$(throttled "$BIN/ddfs" du -s "${more[@]}" "${devs[0]}:/src")
	fsck_s=$(throttled "$BIN/fsck.ddfs" "${devs[@]}")
	ls_s=$(throttled "$BIN/ddfs" ls -lR "${more[@]}" "${devs[0]}:/src")
	TOTAL[$policy]=$(echo "$du_s + $fsck_s + $ls_s" | bc)
	printf '%-14s %10.2f %10.2f %10.2f %9.2fx\n' "$policy" "$du_s" "$fsck_s" "$ls_s" "$(echo "${TOTAL[classic]} / ${TOTAL[$policy]}" | bc -l)"
	for l in "${devs[@]}"; do losetup -d "$l"; done
	rm -f "$W/$policy"-*.img
done
