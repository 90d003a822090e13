#!/usr/bin/env bash
# bench/datacpu.sh (by hand) — where the time per GiB of a data build goes as the data grows
# (issue 16): mkfs.ddfs -r and mkfs.erofs of GIB_POINTS ("1 4 16") GiB of bench/gen big data (the
# files scale.sh uses; the smaller sets are hard links into the largest one), each ending with
# sync -f, timed with GNU time: wall, user, sys, peak RSS. Every mkfs.ddfs run also writes a CPU
# profile (DDFS_CPUPROFILE) whose top functions are printed. Two page-cache states, in order:
#   as-is   whatever the cache holds when the script starts (after scale.sh: mostly free)
#   warm    after sync, drop_caches and a cat of the source (root; skipped otherwise)
# RUNS (2) per state, interleaved. Writes results/datacpu-$NAME.txt (NAME default latest).
set -euo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${BIN:-$ROOT/bin} GIB_POINTS=${GIB_POINTS:-1 4 16} RUNS=${RUNS:-2} NAME=${NAME:-latest} GO=${GO:-go}
OUT=$ROOT/bench/results/datacpu-$NAME.txt
W=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-datacpu.XXXXXX")
trap 'rm -rf "$W"' EXIT
(cd "$ROOT" && "$GO" build -o "$W/gen" ./bench/gen)
LOAD=$(cat /proc/loadavg)
max=0
for g in $GIB_POINTS; do ((g > max)) && max=$g; done
"$W/gen" big -n $((max * 4)) -size 256M "$W/big"
for g in $GIB_POINTS; do
	mkdir -p "$W/g$g"
	for ((i = 0; i < g * 4; i++)); do ln "$W/big/big$i.bin" "$W/g$g/"; done
done
LINES=() PROFS=()
one() { # one STATE TOOL G
	local src=$W/g$3 img=$W/img t0 t1 cmd
	rm -f "$img" && sync -f "$W"
	case $2 in
	ddfs) cmd="DDFS_CPUPROFILE=$W/prof $BIN/mkfs.ddfs -q -b $(($3 * 3 + 1))G -r $src $img && sync -f $img" ;;
	erofs) cmd="mkfs.erofs --quiet $img $src && sync -f $img" ;;
	esac
	t0=$(date +%s.%N)
	/usr/bin/time -f '%U %S %M' -o "$W/t" sh -c "$cmd" >/dev/null
	t1=$(date +%s.%N)
	local line
	line=$(awk -v a="$t0" -v b="$t1" -v g="$3" -v s="$1" -v tool="$2" -v r="$(tail -n 1 "$W/t")" 'BEGIN { split(r, f, " "); printf "%-6s %-5s %2sG wall %7.3fs %6.3fs/GiB user %6.2fs %6.3fs/GiB sys %6.2fs %6.3fs/GiB %4dMiB", s, tool, g, b - a, (b - a) / g, f[1], f[1] / g, f[2], f[2] / g, f[3] / 1024 }')
	echo "$line" && LINES+=("$line")
	if [[ $2 == ddfs ]]; then
		PROFS+=("## $1 ddfs ${3}G: go tool pprof -top (first 25 lines)")
		PROFS+=("$("$GO" tool pprof -top "$BIN/mkfs.ddfs" "$W/prof" 2>/dev/null | head -n 25)")
	fi
}
for state in as-is warm; do
	if [[ $state == warm ]]; then
		[[ $(id -u) -eq 0 ]] || { LINES+=("warm: not root, skipped") && continue; }
		sync && echo 3 >/proc/sys/vm/drop_caches && cat "$W"/big/* >/dev/null
	fi
	for ((r = 0; r < RUNS; r++)); do
		for g in $GIB_POINTS; do one "$state" ddfs "$g" && one "$state" erofs "$g"; done
	done
done
{
	echo "# bench/datacpu.sh GIB_POINTS=\"$GIB_POINTS\" RUNS=$RUNS, $(date -u +%Y-%m-%d), $(nproc) cores, $(free -g | awk '/Mem/ { print $2 }') GiB RAM, loadavg at start: $LOAD"
	echo "# mkfs -r of each point + sync -f: wall, user, sys (GNU time), peak RSS; every run in order"
	printf '%s\n' "${LINES[@]}"
	printf '%s\n' "${PROFS[@]}"
} >"$OUT"
echo "wrote $OUT"
