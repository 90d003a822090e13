#!/usr/bin/env bash
# bench/filesperf.sh (by hand): perf record -g of mkfs.ddfs -r at FILE_POINTS ("100000 1000000") small files (scale.sh's sets): the top symbols, user and kernel, and the syscalls by inclusive share. Prints; the run of 2026-12-03 is results/filesperf-16c.txt
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BIN:-$PWD/bin} W=$(mktemp -d /tmp/ddfs-perfexp.XXXXXX)
trap 'rm -rf "$W"' EXIT
go build -o $W/gen ./bench/gen
. bench/smallset.sh
for n in ${FILE_POINTS:-100000 1000000}; do
	size=$(smallset $W/gen $n $W/src)
	rm -f $W/img && sync -f $W
	echo "== $n files: perf record -F 499 -g -o P mkfs.ddfs -q -b $size -r SRC IMG (then sync -f, untimed)"
	/usr/bin/time -f 'wall %e s user %U s sys %S s peak RSS %M KiB' perf record -q -F 499 -g -o $W/perf.data $B/mkfs.ddfs -q -b $size -r $W/src $W/img 2>&1 | tail -n 1
	sync -f $W/img
	echo "-- top kernel+user symbols by self time (perf report --no-children --sort sym), first 30:"
	perf report -i $W/perf.data --no-children --sort sym --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 30 || true
	echo "-- by syscall entry (perf report --children --sort sym, lines with __x64_sys_ / do_syscall), first 15:"
	perf report -i $W/perf.data --children --sort sym --stdio -g none 2>/dev/null | grep -E '__x64_sys_|__do_sys|ksys_' | head -n 15 || true
done
