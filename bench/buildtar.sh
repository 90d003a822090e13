#!/usr/bin/env bash
# bench/buildtar.sh: scale.sh's small-file build curve (issue 16) with no
# source on any disk: bench/gen writes the set as a tar to a pipe and
# `mkfs.ddfs --tar -` builds from it, the image on $TMPDIR's disk (+ sync
# -f). At 4M files the source folder (22 GB) and the image no longer fit
# the page cache together, so scale.sh's 4M point times the host's disk
# as much as the builder; here the only files are the image's. The
# generator alone (gen | cat >/dev/null) is timed too: it shares the two
# cores with mkfs. No peer row: Debian 12's mkfs.erofs (1.5) and mke2fs
# (1.47.0) build from folders only (buildwarm.sh has them, source in RAM).
# After the build, the rows that need no source (scale.sh's, on the image
# just built, each after a sync -f): ls -lR, du -s, tar-out into
# /dev/null, fsck.ddfs, df, cp -a out into a new folder beside the image
# (+ sync -f: the host's file creation is part of it; after the rows that
# read the image, as at 4M its 16 GB push the image out of the page
# cache), and last rm -r of every folder (+ sync -f): their time per file
# from point to point.
# Last, tar-in: the set from the pipe into a fresh empty image with `ddfs
# tar-in IMG:/` (+ sync -f), scale.sh's cp -r into an existing image
# without a source folder.
# Usage: SCALE=small|full (10k 100k | 100k 1M 4M), or FILE_POINTS="...";
# ROWS picks rows (default all); NO_BUILD=1 with ROWS=tar-in skips the build.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/bin}
case ${SCALE:-small} in
full) FILE_POINTS=${FILE_POINTS:-100000 1000000 4000000} ;;
*) FILE_POINTS=${FILE_POINTS:-10000 100000} ;;
esac
RUNS=${RUNS:-3}
OUT=${OUT:-$ROOT/bench/results/buildtar-${SCALE:-small}.txt}
# The cells in scale.sh's CSV columns, for bench/plot (the build as its own
# series, "ddfs --tar"): scale-tar-$SCALE.csv sorts after the other
# scale-*.csv, so its cells are the ones the plots draw.
CSV=${CSV:-$ROOT/bench/results/scale-tar-${SCALE:-small}.csv}
echo "scale,kind,point,items,row,tool,seconds,per_item,peak_rss_kib,runs,cpu_s" >"$CSV"
label() { awk -v n="$1" 'BEGIN { if (n >= 1e6) printf "%gM", n / 1e6; else printf "%gk", n / 1e3 }'; }
W=$(mktemp -d "${TMPDIR:-/tmp}/buildtar.XXXXXX")
trap 'rm -rf "$W"' EXIT
go build -o "$W/gen" "$ROOT/bench/gen"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
{
echo "# bench/buildtar.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, image on $W ($(stat -f -c %T "$W")), loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# gen small -max 8192 -nest 100 (1000 files a folder) as a tar on a pipe | mkfs.ddfs --tar - (+ sync -f): wall, µs/file, mkfs CPU, peak RSS; gen alone into /dev/null"
first=""
for n in $FILE_POINTS; do
	dirs=$(((n + 999) / 1000))
	g=("$W/gen" small -dirs "$dirs" -files $((n / dirs)) -max 8192 -nest 100 -)
	runs=$RUNS && [ "$n" -gt 200000 ] && runs=1
	# 3x the set's bytes (4 KiB a file on average) + 1 GiB: room, never filled.
	size=$((n * 4096 * 3 / 1048576 + 1024))M
	ts="" gs="" cpu="" rss=0
	[ -n "${NO_BUILD:-}" ] && runs=0
	for ((r = 0; r < runs; r++)); do
		t0=$(date +%s.%N)
		"${g[@]}" >/dev/null
		t1=$(date +%s.%N)
		gs+="$(echo "$t1 - $t0" | bc) "
		rm -f "$W/img"
		sync -f "$W"
		t0=$(date +%s.%N)
		"${g[@]}" | /usr/bin/time -f '%U %S %M' -o "$W/time" "$BIN/mkfs.ddfs" -q -b "$size" --tar - "$W/img"
		sync -f "$W"
		t1=$(date +%s.%N)
		ts+="$(echo "$t1 - $t0" | bc) "
		read -r u s m <"$W/time"
		cpu+="$(echo "$u + $s" | bc) " rss=$((m > rss ? m : rss))
	done
	if [ -z "${NO_BUILD:-}" ]; then
		t=$(printf '%s\n' $ts | median) gt=$(printf '%s\n' $gs | median) c=$(printf '%s\n' $cpu | median)
		per=$(echo "$t * 1000000 / $n" | bc -l)
		[ -z "$first" ] && first=$per
		printf '%8d files  build %8.2f s %6.2f µs/file (%.2fx the first point)  mkfs CPU %8.2f s  peak RSS %4d MiB | gen alone %7.2f s %5.2f µs/file (median of %d)\n' \
			"$n" "$t" "$per" "$(echo "$per / $first" | bc -l)" "$c" "$((rss / 1024))" "$gt" "$(echo "$gt * 1000000 / $n" | bc -l)" "$runs"
		printf '%s,files,%s,%d,build,ddfs --tar,%.4f,%.2f,%d,%d,%.2f\n' "${SCALE:-small}" "$(label "$n")" "$n" "$t" "$per" "$rss" "$runs" "$c" >>"$CSV"
	fi
	# The image of the last build: the rows that read it, then rm -r.
	groups=$(((dirs + 99) / 100))
	rmargs=$(for ((k = 0; k < groups; k++)); do printf '%s:/g%03d ' "$W/img" "$k"; done)
	line=$(printf '%8d files  rows' "$n")
	for row in ${ROWS:-ls-lR du-s tar-out fsck df cp-a-out rm-r tar-in}; do
		case $row in
		ls-lR) c="$BIN/ddfs ls -lR $W/img:/ >/dev/null" ;;
		du-s) c="$BIN/ddfs du -s $W/img:/ >/dev/null" ;;
		tar-out) c="$BIN/ddfs tar-out $W/img | cat >/dev/null" ;;
		cp-a-out) rm -rf "$W/out" && c="$BIN/ddfs cp -a $W/img:/ $W/out && sync -f $W" ;;
		fsck) c="$BIN/fsck.ddfs $W/img >/dev/null" ;;
		df) c="$BIN/ddfs df $W/img >/dev/null" ;;
		rm-r) c="$BIN/ddfs rm -r $rmargs && sync -f $W" ;;
		tar-in) rm -f "$W/img" && "$BIN/mkfs.ddfs" -q -b "$size" "$W/img" && c="${g[*]} | $BIN/ddfs tar-in $W/img:/ && sync -f $W" ;;
		esac
		sync -f "$W"
		t0=$(date +%s.%N)
		/usr/bin/time -f '%M' -o "$W/time" sh -c "$c"
		t1=$(date +%s.%N)
		t=$(echo "$t1 - $t0" | bc)
		printf '%s,files,%s,%d,%s,ddfs,%.4f,%.2f,%d,1,-\n' "${SCALE:-small}" "$(label "$n")" "$n" "$row" "$t" "$(echo "$t * 1000000 / $n" | bc -l)" "$(tail -n 1 "$W/time")" >>"$CSV"
		line+=$(printf ' | %s %.2f s %.2f µs/file %d MiB' "$row" "$t" "$(echo "$t * 1000000 / $n" | bc -l)" "$(($(tail -n 1 "$W/time") / 1024))")
	done
	echo "$line"
	rm -rf "$W/img" "$W/out"
done
} | tee "$OUT"
