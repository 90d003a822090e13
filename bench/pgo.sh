#!/usr/bin/env bash
# bench/pgo.sh — does profile-guided optimisation pay? Builds mkfs.ddfs, ddfs and
# fsck.ddfs twice (with the default.pgo in each main package, and -pgo=off) and
# runs the issue-16 workloads with both, interleaved, RUNS times each:
#   mkfs -r of 100k small files (bench/gen) and of the Go tree, ddfs cp -a out and
#   tar-out of the Go tree, du -s and ls -lR and fsck.ddfs of the 100k image.
# Reports median wall and CPU (user+sys) seconds per variant and the ratio.
# The profiles (default.pgo) are merged DDFS_CPUPROFILE runs of the same
# workloads: go tool pprof -proto a.prof b.prof ... > default.pgo.
# Environment: RUNS (5), GO (go), D1 (the tree, default `go env GOROOT`).
# Output: bench/results/pgo-latest.txt.
set -euo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
RUNS=${RUNS:-5} GO=${GO:-go}
D1=${D1:-$("$GO" env GOROOT)}
W=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-pgo.XXXXXX")
trap 'rm -rf "$W"' EXIT
OUT=$ROOT/bench/results/pgo-latest.txt
LOAD=$(cat /proc/loadavg)
cd "$ROOT"
for v in pgo nopgo; do
	flag=-pgo=auto && [[ $v == nopgo ]] && flag=-pgo=off
	mkdir -p "$W/$v"
	for t in mkfs:mkfs.ddfs ddfs:ddfs fsck:fsck.ddfs; do
		"$GO" build "$flag" -o "$W/$v/${t#*:}" "./${t%%:*}"
	done
done
"$GO" build -o "$W/gen" ./bench/gen
"$W/gen" small -dirs 100 -files 1000 -max 8192 -nest 100 "$W/src"
cp -a "$D1" "$W/go"
"$W/pgo/mkfs.ddfs" -q -b 2200M -r "$W/src" "$W/s.img"
"$W/pgo/mkfs.ddfs" -q -b 1G -r "$W/go" "$W/go.img"

# measure NAME SETUP CMD (CMD uses $B for the binaries): RUNS interleaved runs per variant.
declare -A wall cpu
rows=()
measure() {
	local name=$1 setup=$2 cmd=$3 r v
	rows+=("$name")
	for ((r = 0; r < RUNS; r++)); do
		for v in pgo nopgo; do
			B=$W/$v eval "$setup" >/dev/null 2>&1 || true
			B=$W/$v /usr/bin/time -f '%e %U %S' -o "$W/t" sh -c "$cmd" >/dev/null 2>&1 </dev/null
			read -r e u s <"$W/t"
			wall[$name/$v]+="$e " cpu[$name/$v]+="$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }') "
		done
	done
}
median() { printf '%s\n' $1 | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
export W
measure "mkfs -r 100k files" 'rm -f $W/b.img' '$B/mkfs.ddfs -q -b 2200M -r $W/src $W/b.img'
measure "mkfs -r Go tree" 'rm -f $W/b.img' '$B/mkfs.ddfs -q -b 1G -r $W/go $W/b.img'
measure "cp -a out Go tree" 'rm -rf $W/out' '$B/ddfs cp -a $W/go.img:/ $W/out'
measure "tar-out Go tree" : '$B/ddfs tar-out $W/go.img | cat >/dev/null'
measure "du -s 100k" : '$B/ddfs du -s $W/s.img:/'
measure "ls -lR 100k" : '$B/ddfs ls -lR $W/s.img:/ >/dev/null'
measure "fsck 100k" : '$B/fsck.ddfs $W/s.img'
{
	echo "# bench/pgo.sh $(date -u +%Y-%m-%d), $(nproc) cores, RUNS=$RUNS interleaved; loadavg at start: $LOAD"
	echo "# median wall s and CPU (user+sys) s, default.pgo vs -pgo=off; ratio = pgo/off (below 1: PGO faster)"
	printf '%-20s %9s %9s %6s | %9s %9s %6s\n' row wall-pgo wall-off ratio cpu-pgo cpu-off ratio
	for n in "${rows[@]}"; do
		a=$(median "${wall[$n/pgo]}") b=$(median "${wall[$n/nopgo]}") c=$(median "${cpu[$n/pgo]}") d=$(median "${cpu[$n/nopgo]}")
		printf '%-20s %9s %9s %6s | %9s %9s %6s\n' "$n" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')" \
			"$c" "$d" "$(awk -v a="$c" -v b="$d" 'BEGIN { printf "%.3f", a / b }')"
	done
} | tee "$OUT"
