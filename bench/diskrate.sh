#!/usr/bin/env bash
# bench/diskrate.sh — the scratch disk's own write rate at scale.sh's data points, to
# tell a writer's growth in s/GiB from the disk's and the page cache's: cp of the first
# 4 x GIB files of 256 MiB (bench/gen big, the data scale.sh uses) into a folder, then
# sync -f, timed with GNU time after an untimed sync -f. GIB_POINTS (default "1 4 16"),
# RUNS (1), TMPDIR, GO; needs 2 x the largest point free. Writes
# results/diskrate-$NAME.txt (NAME default latest).
set -euo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
GIB_POINTS=${GIB_POINTS:-1 4 16} RUNS=${RUNS:-1} NAME=${NAME:-latest} GO=${GO:-go}
OUT=$ROOT/bench/results/diskrate-$NAME.txt
W=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-diskrate.XXXXXX")
trap 'rm -rf "$W"' EXIT
(cd "$ROOT" && "$GO" build -o "$W/gen" ./bench/gen)
max=0
for g in $GIB_POINTS; do ((g > max)) && max=$g; done
LOAD=$(cat /proc/loadavg)
"$W/gen" big -n $((max * 4)) -size 256M "$W/src"
LINES=()
for ((r = 0; r < RUNS; r++)); do
	for g in $GIB_POINTS; do
		rm -rf "$W/dst" && mkdir "$W/dst" && sync -f "$W"
		files=()
		for ((i = 0; i < g * 4; i++)); do files+=("$W/src/big$i.bin"); done
		t0=$(date +%s.%N)
		/usr/bin/time -f '%U %S %M' -o "$W/rss" sh -c 'cp "$@" "$0" && sync -f "$0"' "$W/dst" "${files[@]}"
		t1=$(date +%s.%N)
		line=$(awk -v a="$t0" -v b="$t1" -v g="$g" -v r="$(tail -n 1 "$W/rss")" 'BEGIN { split(r, f, " "); printf "data %3sG cp+sync %8.3fs %6.3fs/GiB %6.0fMB/s cpu %.2fs %dMiB", g, b - a, (b - a) / g, g * 1073.741824 / (b - a), f[1] + f[2], f[3] / 1024 }')
		echo "$line" && LINES+=("$line")
	done
done
rm -rf "$W/dst"
{
	echo "# bench/diskrate.sh GIB_POINTS=\"$GIB_POINTS\" RUNS=$RUNS, $(date -u +%Y-%m-%d), $(nproc) cores, $(free -g | awk '/Mem/ { print $2 }') GiB RAM, loadavg at start: $LOAD"
	echo "# cp of 4 x G files of 256 MiB of random bytes + sync -f, after an untimed sync -f; every run in order"
	printf '%s\n' "${LINES[@]}"
} >"$OUT"
echo "wrote $OUT"
