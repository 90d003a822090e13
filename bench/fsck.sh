#!/usr/bin/env bash
# bench/fsck.sh — fsck.ddfs against e2fsck -fn and btrfs check --readonly on images
# holding the same trees, interleaved in one run (each round runs every tool once,
# so noise on the shared machine hits all of them):
#   D2    the issue's backup-like set: COPIES x the Go tree + COPIES VM-like files
#         of VM_SIZE (seeded random data): metadata check, 3 tools
#   SMALL FILES small files (bench/gen small, 0..SMALL_MAX bytes, 1000 per
#         directory, nested by 100): metadata check, 3 tools
#   DATA  DATA_GIB GiB of seeded random files (bench/gen big, 256 MiB each):
#         fsck.ddfs --check-data vs btrfs check --check-data-csum
#   REPAIR fsck.ddfs -y on the D2 image with DAMAGE damaged inodes (nlink) vs a
#         clean check of it
# Wall time (median of RUNS, millisecond steps) and the largest peak RSS of the
# runs (/usr/bin/time).
#
# The images are built first (untimed, niced) into KEEP, and reused when KEEP
# already holds them: `bench/fsck.sh prepare` builds them without measuring, so
# a measured run under the bench lock (flock /work/bench.lock bash bench/fsck.sh)
# spends its minutes measuring.
#
# Environment:
#   BIN      directory with mkfs.ddfs, fsck.ddfs (default: bin)
#   SRC      tree copied in (default: $(go env GOROOT)/src)
#   COPIES   (4) VM_SIZE (350M) SMALL_FILES (1000000) SMALL_MAX (1024)
#   DATA_GIB (4) DAMAGE (1000) RUNS (3)
#   SMALL_NO_BTRFS=1  no btrfs image of the small files (mkfs.btrfs -r of 1M files
#            takes long on a loaded host): its row is left out
#   KEEP     where the images live (default: /tmp/fsckbench); removed at the end
#            unless KEEP_IMAGES=1
#   ROWS     which rows to build and measure (default "d2 small data repair"):
#            ROWS=small SMALL_NO_BTRFS=1 needs neither btrfs-progs nor the other sets
#   OUT      the results file (default bench/results/fsck-latest.txt)
# Output: a table on stdout, also written to OUT.
set -euo pipefail
export LC_ALL=C PATH="$PATH:/usr/sbin:/sbin"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=$(cd "${BIN:-$ROOT/bin}" && pwd)
SRC=${SRC:-$(go env GOROOT)/src}
COPIES=${COPIES:-4} VM_SIZE=${VM_SIZE:-350M}
SMALL_FILES=${SMALL_FILES:-1000000} SMALL_MAX=${SMALL_MAX:-1024}
DATA_GIB=${DATA_GIB:-4} DAMAGE=${DAMAGE:-1000} RUNS=${RUNS:-3}
K=${KEEP:-/tmp/fsckbench}
MODE=${1:-measure}
ROWS=" ${ROWS:-d2 small data repair} "
OUT=${OUT:-$HERE/results/fsck-latest.txt}
want() { [[ $ROWS == *" $1 "* ]]; }
needs_tree() { want d2 || want repair; }
needs_btrfs() { needs_tree || want data || { want small && [[ ${SMALL_NO_BTRFS:-0} != 1 ]]; }; }
cleanup() {
	rm -rf "$K/tree" "$K/small" "$K/data" "$K/dmg.img" "$K/t" "$K/t.rss"
	[[ $MODE == prepare || ${KEEP_IMAGES:-0} == 1 ]] || rm -rf "$K"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for t in mkfs.ddfs fsck.ddfs; do [[ -x "$BIN/$t" ]] || { echo "bench: $BIN/$t missing (make build)" >&2 && exit 1; }; done
tools="mke2fs e2fsck" && needs_btrfs && tools+=" mkfs.btrfs btrfs"
for t in $tools; do command -v $t >/dev/null || { echo "bench: $t missing" >&2 && exit 1; }; done
mkdir -p "$K"
(cd "$ROOT" && go build -o "$K/fsckdamage" ./bench/fsckdamage && go build -o "$K/gen" ./bench/gen)

# image SET KIND: builds $K/SET.KIND from the tree $K/SET unless it exists.
image() {
	local set=$1 kind=$2 out=$K/$1.$2
	[[ -s $out ]] && return 0
	case $kind in
	ddfs) nice -n 10 "$BIN/mkfs.ddfs" -q -b "$3" -r "$K/$set" "$out" ;;
	ext4) nice -n 10 mke2fs -q -t ext4 -N $(($(find "$K/$set" | wc -l) + 100000)) -d "$K/$set" "$out" "$3" >/dev/null ;;
	btrfs) nice -n 10 mkfs.btrfs -q -r "$K/$set" "$out" >/dev/null ;;
	esac
}
# describe SET: "N files, M MiB" of its tree (kept in SET.desc for later runs).
describe() {
	[[ -s $K/$1.desc ]] || echo "$(find "$K/$1" | wc -l) files and directories, $(($(du -sb "$K/$1" | cut -f1) / 1048576)) MiB" >"$K/$1.desc"
	cat "$K/$1.desc"
}

if needs_tree && [[ ! -s $K/tree.btrfs ]]; then
	rm -rf "$K/tree" && mkdir -p "$K/tree"
	for i in $(seq 1 "$COPIES"); do cp -a "$SRC" "$K/tree/go$i"; done
	nice -n 10 "$K/gen" big -seed 7 -n "$COPIES" -size "$VM_SIZE" "$K/tree/vm" >/dev/null
	describe tree >/dev/null
	image tree ddfs 8G && image tree ext4 8G && image tree btrfs
fi
if want small && [[ ! -s $K/small.ext4 || ${SMALL_NO_BTRFS:-0} != 1 && ! -s $K/small.btrfs ]]; then
	rm -rf "$K/small"
	dirs=$((SMALL_FILES / 1000))
	nice -n 10 "$K/gen" small -seed 3 -dirs "$dirs" -files 1000 -max "$SMALL_MAX" -nest 100 "$K/small" >/dev/null
	describe small >/dev/null
	image small ddfs 16G && image small ext4 16G
	[[ ${SMALL_NO_BTRFS:-0} == 1 ]] || image small btrfs
fi
if want data && [[ ! -s $K/data.btrfs ]]; then
	rm -rf "$K/data"
	nice -n 10 "$K/gen" big -seed 5 -n $((DATA_GIB * 4)) -size 256M "$K/data" >/dev/null
	describe data >/dev/null
	image data ddfs $((DATA_GIB * 2 + 2))G && image data btrfs
fi
rm -rf "$K/tree" "$K/small" "$K/data" # the images hold them
[[ $MODE == prepare ]] && { echo "bench: images ready in $K"; exit 0; }


# timed CMD...: runs CMD, leaves "SECONDS KIB" in $K/t: wall time from bash's
# EPOCHREALTIME (microseconds; /usr/bin/time's %e has 10 ms steps, too coarse
# for checks of 50 ms) and the peak RSS from /usr/bin/time.
timed() {
	local t0=$EPOCHREALTIME t1
	/usr/bin/time -f "%M" -o "$K/t.rss" "$@" >/dev/null 2>&1 || true
	t1=$EPOCHREALTIME
	echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') $(tail -n 1 "$K/t.rss")" >"$K/t"
}
# rounds NAME CMD... per tool, separated by "--": RUNS rounds of every tool in
# turn; prints per tool "seconds MiB" (median time, largest RSS).
declare -A T R
rounds() {
	local name=$1 i j
	shift
	local cmds=() cur=()
	for a in "$@"; do
		if [[ $a == -- ]]; then cmds+=("${cur[*]}") && cur=(); else cur+=("$a"); fi
	done
	cmds+=("${cur[*]}")
	for ((i = 0; i < RUNS; i++)); do
		for j in "${!cmds[@]}"; do
			timed ${cmds[$j]}
			T[$name.$j]+="$(tail -n 1 "$K/t" | cut -d' ' -f1) "
			R[$name.$j]+="$(tail -n 1 "$K/t" | cut -d' ' -f2) "
		done
	done
}
median() { tr ' ' '\n' | grep . | sort -n | sed -n "$(((RUNS + 1) / 2))p"; }
maxrss() { tr ' ' '\n' | grep . | sort -n | tail -n 1 | awk '{printf "%.0f", $1/1024}'; }
row() { # LABEL NAME.J [BASE NAME.J]: seconds, MiB and the ratio to BASE
	local s r
	s=$(echo "${T[$2]}" | median) r=$(echo "${R[$2]}" | maxrss)
	if [[ -n ${3:-} ]]; then
		printf '%-40s %8s %8s %10s\n' "$1" "$s" "$r" "$(echo "${T[$3]}" | median | awk -v s="$s" '{printf "%.2f", s / $1}')"
	else
		printf '%-40s %8s %8s %10s\n' "$1" "$s" "$r" "-"
	fi
}
# The ddfs check must be clean: a figure is of a check that ran to the end.
for set in tree small data; do
	[[ -s $K/$set.ddfs ]] || continue
	"$BIN/fsck.ddfs" -q "$K/$set.ddfs" >/dev/null || { echo "bench: $set.ddfs is not clean" >&2 && exit 1; }
done

d2() {
	rounds d2 "$BIN/fsck.ddfs" "$K/tree.ddfs" -- e2fsck -fn "$K/tree.ext4" -- btrfs check --readonly "$K/tree.btrfs"
	row "D2 fsck.ddfs" d2.0 d2.1
	row "D2 e2fsck -fn" d2.1 d2.1
	row "D2 btrfs check --readonly" d2.2 d2.1
}
small() {
	if [[ -s $K/small.btrfs ]]; then
		rounds sm "$BIN/fsck.ddfs" "$K/small.ddfs" -- e2fsck -fn "$K/small.ext4" -- btrfs check --readonly "$K/small.btrfs"
	else # SMALL_NO_BTRFS=1 prepare: mkfs.btrfs -r did not finish in time
		rounds sm "$BIN/fsck.ddfs" "$K/small.ddfs" -- e2fsck -fn "$K/small.ext4"
	fi
	row "SMALL fsck.ddfs" sm.0 sm.1
	row "SMALL e2fsck -fn" sm.1 sm.1
	if [[ -s $K/small.btrfs ]]; then row "SMALL btrfs check --readonly" sm.2 sm.1; fi
}
data() {
	printf '%-40s %8s %8s %10s\n' "" "" "" "/ btrfs"
	rounds dt "$BIN/fsck.ddfs" --check-data "$K/data.ddfs" -- btrfs check --readonly --check-data-csum "$K/data.btrfs"
	row "DATA fsck.ddfs --check-data" dt.0 dt.1
	row "DATA btrfs check --check-data-csum" dt.1 dt.1
}
# Repair: a fresh damaged copy per run, its dirty pages written out first
# (else the repair's first fsync would write them and count them).
repair() {
	printf '%-40s %8s %8s %10s\n' "" "" "" "/ clean"
	for ((i = 0; i < RUNS; i++)); do
		cp --sparse=always "$K/tree.ddfs" "$K/dmg.img"
		"$K/fsckdamage" "$K/dmg.img" "$DAMAGE" >/dev/null
		sync "$K/dmg.img"
		timed "$BIN/fsck.ddfs" -y "$K/dmg.img"
		T[rp.0]+="$(tail -n 1 "$K/t" | cut -d' ' -f1) " R[rp.0]+="$(tail -n 1 "$K/t" | cut -d' ' -f2) "
		"$BIN/fsck.ddfs" -q "$K/dmg.img" >/dev/null || echo "note: the image is not clean after -y" >&2
		timed "$BIN/fsck.ddfs" "$K/tree.ddfs"
		T[rp.1]+="$(tail -n 1 "$K/t" | cut -d' ' -f1) " R[rp.1]+="$(tail -n 1 "$K/t" | cut -d' ' -f2) "
	done
	row "D2 fsck.ddfs -y ($DAMAGE damaged inodes)" rp.0 rp.1
	row "D2 fsck.ddfs (clean, same rounds)" rp.1 rp.1
}

{
	echo "fsck bench ($(date -u +%F), $(nproc) cores, loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)), $RUNS interleaved rounds: median seconds, largest peak RSS; rows:$ROWS"
	if needs_tree; then echo "D2:    $COPIES x Go tree + $COPIES x $VM_SIZE VM-like: $(cat "$K/tree.desc")"; fi
	if want small; then echo "SMALL: $(cat "$K/small.desc") (0..$SMALL_MAX bytes each)"; fi
	if want data; then echo "DATA:  $(cat "$K/data.desc") ($((DATA_GIB * 4)) x 256 MiB seeded random)"; fi
	printf '%-40s %8s %8s %10s\n' "command" "seconds" "RSS MiB" "/ e2fsck"
	for r in d2 small data repair; do
		if want $r; then $r; fi
	done
} | tee "$OUT"
