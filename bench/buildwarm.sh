#!/usr/bin/env bash
# bench/buildwarm.sh: the build row of scale.sh (issue 16) with the source
# held in RAM (SRC_DIR, a tmpfs: default /dev/shm) and the images on
# $TMPDIR's disk, so the time per file is the builders' own and not the
# host's page cache evicting a source that no longer fits beside the
# images (what scale.sh's 1M and 4M points on one disk measure as well).
# mkfs.ddfs -r vs mke2fs -d vs mkfs.erofs, each + sync -f, interleaved;
# RUNS per point (1 at points over 200k files).
# Usage: FILE_POINTS="100000 1000000" bash bench/buildwarm.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/bin}
SRC_DIR=${SRC_DIR:-/dev/shm}
FILE_POINTS=${FILE_POINTS:-100000 1000000}
RUNS=${RUNS:-3}
W=$(mktemp -d "${TMPDIR:-/tmp}/buildwarm.XXXXXX")
S=$(mktemp -d "$SRC_DIR/buildwarm-src.XXXXXX")
trap 'rm -rf "$W" "$S"' EXIT
. "$ROOT/bench/smallset.sh"
go build -o "$W/gen" "$ROOT/bench/gen"
echo "# bench/buildwarm.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, source on $SRC_DIR ($(stat -f -c %T "$SRC_DIR")), images on $W ($(stat -f -c %T "$W")), loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
# timed CMD: wall seconds of CMD (then sync -f of the image dir) into T, peak RSS KiB into R.
timed() {
	sync -f "$W"
	local t0 t1
	t0=$(date +%s.%N)
	/usr/bin/time -f '%M' -o "$W/rss" sh -c "$1 && sync -f $W" >/dev/null 2>"$W/err" || { cat "$W/err" >&2; exit 1; }
	t1=$(date +%s.%N)
	T=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') R=$(tail -n 1 "$W/rss")
}
for n in $FILE_POINTS; do
	size=$(smallset "$W/gen" "$n" "$S/t")
	runs=$RUNS && [ "$n" -gt 200000 ] && runs=1
	declare -A ts=() rs=()
	for ((r = 0; r < runs; r++)); do
		for tool in ddfs ext4 erofs; do
			rm -f "$W/img"
			case $tool in
			ddfs) timed "$BIN/mkfs.ddfs -q -b $size -r $S/t $W/img" ;;
			ext4) timed "mke2fs -q -F -t ext4 -N $((n * 2 + 10000)) -d $S/t $W/img $size" ;;
			erofs) timed "mkfs.erofs --quiet $W/img $S/t" ;;
			esac
			ts[$tool]+="$T " rs[$tool]=$(( ${rs[$tool]:-0} > R ? ${rs[$tool]:-0} : R ))
		done
	done
	line=$(printf '%8d files' "$n")
	d=$(printf '%s\n' ${ts[ddfs]} | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
	for tool in ddfs ext4 erofs; do
		m=$(printf '%s\n' ${ts[$tool]} | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
		line+=$(awk -v t="$m" -v n="$n" -v r="${rs[$tool]}" -v d="$d" -v tool="$tool" 'BEGIN { printf " | %s %.2fs %.2fµs/file %dMiB (ddfs/it %.2f)", tool, t, t / n * 1e6, r / 1024, d / t }')
	done
	echo "$line (median of $runs)"
	rm -rf "$S/t"
done
