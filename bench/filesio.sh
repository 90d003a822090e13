#!/usr/bin/env bash
# bench/filesio.sh (by hand): I/O of mkfs.ddfs -r per small file (scale.sh's sets, FILE_POINTS "100000 1000000"): the last /proc/PID/io read (polled every 0.2 s) before the tool exits: wchar, rchar, write calls, per file and against the source and image bytes. Prints; the run of 2026-12-03 is results/filesio-16c.txt
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BIN:-$PWD/bin} W=$(mktemp -d /tmp/ddfs-wchar.XXXXXX)
trap 'rm -rf "$W"' EXIT
go build -o $W/gen ./bench/gen
. bench/smallset.sh
for n in ${FILE_POINTS:-100000 1000000}; do
	size=$(smallset $W/gen $n $W/src)
	app=$(du -sk --apparent-size $W/src | cut -f1)
	rm -f $W/img && sync -f $W
	$B/mkfs.ddfs -q -b $size -r $W/src $W/img &
	p=$!
	last=""
	while kill -0 $p 2>/dev/null; do l=$(cat /proc/$p/io 2>/dev/null | tr '\n' ' ') && [[ -n $l ]] && last=$l; sleep 0.2; done
	wait $p
	alloc=$(du -k $W/img | cut -f1)
	echo "$n files: source apparent ${app} KiB; image allocated ${alloc} KiB; last /proc/PID/io seen (<=0.2 s before exit): $last"
	echo "$last" | awk -v n=$n -v a=$app -v al=$alloc '{ for (i = 1; i < NF; i++) { if ($i == "wchar:") w = $(i+1); if ($i == "rchar:") r = $(i+1); if ($i == "syscw:") c = $(i+1) } printf "  per file: wchar %.0f B, rchar %.0f B, write calls %.2f; wchar / source apparent bytes %.2f, wchar / image allocated bytes %.2f\n", w / n, r / n, c / n, w / (a * 1024), w / (al * 1024) }'
done
