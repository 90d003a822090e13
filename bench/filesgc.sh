#!/usr/bin/env bash
# bench/filesgc.sh (by hand): mkfs.ddfs -r of scale.sh's 1M small-file set (gen small -dirs 1000 -files 1000 -max 8192 -nest 100) with the tool's own 160 MiB soft memory limit (pkg/cli/mem.go) and with GOMEMLIMIT=2GiB (which replaces it), GODEBUG=gctrace=1; wall (s = us per file at 1M), user, sys, peak RSS, GC cycles, then fsck. Prints its report; the run of 2026-12-03 is results/filesgc-16c.txt
set -euo pipefail
B=${BIN:-$(cd "$(dirname "$0")/.." && pwd)/bin} W=$(mktemp -d /tmp/ddfs-gcexp.XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$(dirname "$0")/.." && go build -o $W/gen ./bench/gen
. bench/smallset.sh
size=$(smallset $W/gen 1000000 $W/src)
for mode in default GOMEMLIMIT=2GiB; do
	rm -f $W/img && sync -f $W
	envs="GODEBUG=gctrace=1"; [[ $mode != default ]] && envs="$envs $mode"
	t0=$(date +%s.%N)
	/usr/bin/time -f '%U %S %M' -o $W/t env $envs sh -c "$B/mkfs.ddfs -q -b $size -r $W/src $W/img && sync -f $W/img" 2>$W/gc
	t1=$(date +%s.%N)
	echo "== $mode: env $envs mkfs.ddfs -q -b $size -r SRC IMG && sync -f IMG"
	awk -v a="$t0" -v b="$t1" -v r="$(tail -n 1 $W/t)" 'BEGIN { split(r, f, " "); printf "wall %.3fs (%.2fus/file) user %.2fs sys %.2fs peak RSS %dMiB\n", b - a, (b - a), f[1], f[2], f[3] / 1024 }'
	echo "GC cycles: $(grep -c '^gc ' $W/gc); forced by the limit or not, the last 3 gctrace lines:"
	grep '^gc ' $W/gc | tail -n 3
	grep '^gc ' $W/gc | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /->/ && $(i+1) == "MB,") { split($i, h, "->"); print h[3] } }' | sort -n | tail -n 1 | sed 's/^/largest live heap after a GC (MB): /'
	"$B/fsck.ddfs" $W/img >/dev/null && echo "fsck clean"
done
