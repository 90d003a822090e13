#!/usr/bin/env bash
# Scrub benchmark (issue 11): `ddfs scrub` of a raid1 set (2 image files) holding SIZE of
# random data against `btrfs scrub start -B` on a loop-mounted raid1 btrfs (2 loop
# devices) holding the same files, and against the read limit: `cat` of the two ddfs
# images to /dev/null (everything scrub must read, and the few holes: the images are
# made barely larger than their content). Runs are interleaved
# (ddfs, btrfs, cat, ddfs, ...) so drifts of the host disk hit all three alike; the page
# cache is dropped before each run when the kernel lets us (else every run is warm,
# after one untimed warm-up of each). Reported: median wall time, the bytes each tool
# says it read (every copy of data and metadata), the rate, the ratios, the worst
# max RSS of each tool over its runs (btrfs: the userspace tool only, the
# kernel does the reading) and the load average before and after.
# Needs root for the loop mount; the btrfs peer is skipped with a note otherwise.
#
# Environment: BIN (bin), SIZE (4G), RUNS (3), TMPDIR (/tmp).
# Output: the table on stdout and in bench/results/scrub-latest.txt.
set -euo pipefail
export LC_ALL=C PATH="$PATH:/usr/sbin:/sbin"
BIN=${BIN:-bin}
SIZE=${SIZE:-4G}
RUNS=${RUNS:-3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=$(cd "$BIN" && pwd)
root=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-scrub.XXXXXX")
mnt=$root/mnt
loops=()
cleanup() {
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	for l in "${loops[@]}"; do losetup -d "$l" 2>/dev/null || true; done
	rm -rf "$root"
}
trap cleanup EXIT
note() { echo "  note: $*"; }
now() { date +%s.%N; }
rss() { local t=$1; shift; /usr/bin/time -a -o "$root/m-$t" -f %M "$@"; } # max RSS in KiB, one line a run
load() { cut -d' ' -f1-3 /proc/loadavg; }
median() { sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
bytes() { numfmt --from=iec "$1"; }

out=$HERE/results/scrub-latest.txt
mkdir -p "$HERE/results"
exec > >(tee "$out")

size_b=$(bytes "$SIZE")
# Images barely larger than their content, so that cat (the read limit) reads
# mostly data, not holes.
img_b=$(((size_b * 23 / 20 + (256 << 20)) >> 20 << 20))
go build -o "$root/gen" ./bench/gen
mkdir -p "$root/data" "$mnt"
"$root/gen" big -n 4 -size "$((size_b / 4))" "$root/data" >/dev/null

cold=0
if sync && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then cold=1; fi
drop() { [[ $cold -eq 1 ]] && sync && echo 3 >/proc/sys/vm/drop_caches; return 0; }

echo "# scrub benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $SIZE of data on raid1 (2 devices), runs=$RUNS, page cache $([[ $cold -eq 1 ]] && echo dropped || echo warm)"

"$BIN/mkfs.ddfs" -q -b "$img_b" -d raid1 -m raid1 "$root/a.img" "$root/b.img"
"$BIN/ddfs" cp -r "$root/data" "$root/a.img:/"

btrfs_ok=0
if [[ $(id -u) -eq 0 ]] && command -v losetup >/dev/null; then
	command -v mkfs.btrfs >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends btrfs-progs >/dev/null 2>&1 || true
fi
if [[ $(id -u) -eq 0 ]] && command -v mkfs.btrfs >/dev/null; then
	truncate -s "$img_b" "$root/p1.img" "$root/p2.img"
	if l1=$(losetup -f --show "$root/p1.img") && loops+=("$l1") && l2=$(losetup -f --show "$root/p2.img") && loops+=("$l2") &&
		mkfs.btrfs -q -f -d raid1 -m raid1 "$l1" "$l2" >/dev/null 2>&1 && mount "$l1" "$mnt"; then
		cp -r "$root/data" "$mnt/" && sync -f "$mnt"
		btrfs_ok=1
	fi
fi
[[ $btrfs_ok -eq 1 ]] || note "btrfs peer skipped (needs root, losetup, btrfs-progs)"

run_ddfs() {
	local t0 t1
	drop; t0=$(now)
	rss ddfs "$BIN/ddfs" scrub --json "$root/a.img" >"$root/ddfs.json"
	t1=$(now)
	echo "$t1 - $t0" | bc >>"$root/t-ddfs"
	jq '[.devices[].bytes_read] | add' "$root/ddfs.json" >>"$root/b-ddfs"
	[[ $(jq '[.devices[].errors_found] | add' "$root/ddfs.json") -eq 0 ]] || { echo "ddfs scrub found errors" >&2; exit 1; }
}
run_btrfs() {
	local t0 t1
	drop; t0=$(now)
	rss btrfs btrfs scrub start -B -R "$mnt" >"$root/btrfs.txt"
	t1=$(now)
	echo "$t1 - $t0" | bc >>"$root/t-btrfs"
	awk '/data_bytes_scrubbed|tree_bytes_scrubbed/ {s += $2} END {printf "%.0f\n", s}' "$root/btrfs.txt" >>"$root/b-btrfs"
}
run_cat() {
	local t0 t1
	drop; t0=$(now)
	rss cat cat "$root/a.img" "$root/b.img" >/dev/null
	t1=$(now)
	echo "$t1 - $t0" | bc >>"$root/t-cat"
	echo $(($(stat -c %s "$root/a.img") + $(stat -c %s "$root/b.img"))) >>"$root/b-cat" # holes included: cat reads them
}

tools=(ddfs cat)
[[ $btrfs_ok -eq 1 ]] && tools=(ddfs btrfs cat)
if [[ $cold -eq 0 ]]; then
	for t in "${tools[@]}"; do "run_$t"; done # warm-up, not timed
	for t in "${tools[@]}"; do : >"$root/t-$t"; : >"$root/b-$t"; : >"$root/m-$t"; done
fi
echo "# load average before the runs: $(load)"
for _ in $(seq "$RUNS"); do
	for t in "${tools[@]}"; do "run_$t"; done
done

echo "# load average after the runs: $(load)"
printf '%-28s %10s %14s %12s %12s\n' tool "seconds" "bytes read" "MiB/s" "max RSS KiB"
declare -A sec rate
for t in "${tools[@]}"; do
	sec[$t]=$(median <"$root/t-$t")
	b=$(median <"$root/b-$t")
	rate[$t]=$(echo "scale=1; $b / ${sec[$t]} / 1048576" | bc)
	case $t in
	ddfs) label="ddfs scrub" ;;
	btrfs) label="btrfs scrub start -B" ;;
	cat) label="cat a.img b.img (read limit)" ;;
	esac
	printf '%-28s %10.2f %14d %12.1f %12d\n' "$label" "${sec[$t]}" "$b" "${rate[$t]}" "$(sort -n "$root/m-$t" | tail -1)"
done
echo "  -> ddfs scrub rate = $(echo "scale=2; ${rate[ddfs]} / ${rate[cat]}" | bc)x the read limit (target >= 0.80)"
if [[ $btrfs_ok -eq 1 ]]; then
	echo "  -> ddfs scrub wall time = $(echo "scale=2; ${sec[ddfs]} / ${sec[btrfs]}" | bc)x btrfs scrub's (target < 1)"
fi
