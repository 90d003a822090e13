#!/usr/bin/env bash
# bench/filescpu.sh (by hand) — where mkfs.ddfs -r's time per file goes as the number of
# small files grows (issue 16): scale.sh's small-file sets (bench/gen small -max 8192 -nest 100)
# of FILE_POINTS ("100000 1000000") files, one build each (+ sync -f, after an untimed
# sync -f) with GNU time (wall, user, sys, peak RSS) and a DDFS_CPUPROFILE whose top
# functions are printed. Writes results/filescpu-$NAME.txt (NAME default latest).
set -euo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${BIN:-$ROOT/bin} FILE_POINTS=${FILE_POINTS:-100000 1000000} NAME=${NAME:-latest} GO=${GO:-go}
OUT=$ROOT/bench/results/filescpu-$NAME.txt
W=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-filescpu.XXXXXX")
trap 'rm -rf "$W"' EXIT
(cd "$ROOT" && "$GO" build -o "$W/gen" ./bench/gen)
. "$ROOT/bench/smallset.sh"
LOAD=$(cat /proc/loadavg)
LINES=() PROFS=()
for n in $FILE_POINTS; do
	size=$(smallset "$W/gen" "$n" "$W/src")
	rm -f "$W/img" && sync -f "$W"
	t0=$(date +%s.%N)
	/usr/bin/time -f '%U %S %M' -o "$W/t" env DDFS_CPUPROFILE="$W/prof" sh -c "$BIN/mkfs.ddfs -q -b $size -r $W/src $W/img && sync -f $W/img"
	t1=$(date +%s.%N)
	line=$(awk -v a="$t0" -v b="$t1" -v n="$n" -v r="$(tail -n 1 "$W/t")" 'BEGIN { split(r, f, " "); printf "%8d files wall %8.3fs %7.2fus/file user %8.2fs %7.2fus/file sys %8.2fs %7.2fus/file %4dMiB", n, b - a, (b - a) / n * 1e6, f[1], f[1] / n * 1e6, f[2], f[2] / n * 1e6, f[3] / 1024 }')
	echo "$line" && LINES+=("$line")
	PROFS+=("## mkfs.ddfs -r, $n files: go tool pprof -top (first 40 lines)")
	PROFS+=("$("$GO" tool pprof -top "$BIN/mkfs.ddfs" "$W/prof" 2>/dev/null | head -n 40)")
	rm -f "$W/img"
done
{
	echo "# bench/filescpu.sh FILE_POINTS=\"$FILE_POINTS\", $(date -u +%Y-%m-%d), $(nproc) cores, $(free -g | awk '/Mem/ { print $2 }') GiB RAM, loadavg at start: $LOAD"
	echo "# mkfs.ddfs -r + sync -f of gen small -max 8192 -nest 100: wall, user, sys (GNU time), peak RSS"
	printf '%s\n' "${LINES[@]}"
	printf '%s\n' "${PROFS[@]}"
} >"$OUT"
echo "wrote $OUT"
