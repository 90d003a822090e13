#!/usr/bin/env bash
# Snapshot create at scale (issue 39): images of 10k and 100k small files (SCALE=1 adds 1M),
# built with mkfs.ddfs --tar from `gen small`; for each, `ddfs snapshot create` against the
# same process opening the image read-only (`ddfs snapshot list` of an image with no
# snapshot) and against the smallest write (`ddfs touch` of a new file: a writer's open,
# whose first allocation checks the free space against every tree's interior nodes, and
# one commit), interleaved, medians of RUNS. The snapshot's own cost is create - touch.
# list(1) is `snapshot list` with one snapshot holding every file (one run), list(5) with
# four more, a file apart (their shared leaves read once).
# Then `ddfs snapshot delete` of a snapshot that alone holds every file (the live tree
# emptied first), with its time and max RSS.
#
# Environment: BIN (bin), RUNS (5), SCALE (0), TMPDIR (/tmp).
# Output: the table on stdout and in bench/results/snapshot-latest.txt.
set -euo pipefail
export LC_ALL=C
BIN=${BIN:-bin}
RUNS=${RUNS:-5}
SCALE=${SCALE:-0}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=$(cd "$BIN" && pwd)
root=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-snapshot.XXXXXX")
trap 'rm -rf "$root"' EXIT
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
out=$HERE/results/snapshot-latest.txt
mkdir -p "$HERE/results"
exec > >(tee "$out")
go build -o "$root/gen" ./bench/gen
sizes="10000 100000"
[[ $SCALE -eq 1 ]] && sizes="$sizes 1000000"
echo "# snapshot benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, runs=$RUNS, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %10s %10s %10s %14s %12s %12s %10s %14s\n' files "create s" "list s" "touch s" "create-touch" "list(1) s" "list(5) s" "delete s" "delete RSS KiB"
for n in $sizes; do
	img=$root/s$n.img
	"$root/gen" small -dirs $((n / 1000)) -files 1000 -max 2048 - | "$BIN/mkfs.ddfs" -q -b $((n / 1000 * 16 + 1024))M --tar - "$img"
	sync # mkfs's dirty pages would be written back by the first runs' fdatasync (create 28 ms, not 15, at 1M)
	: >"$root/c" && : >"$root/f" && : >"$root/w"
	for r in $(seq "$RUNS"); do
		t0=$(now) && "$BIN/ddfs" snapshot list "$img" >/dev/null && t1=$(now)
		echo "$t1 - $t0" | bc >>"$root/f"
		t0=$(now) && "$BIN/ddfs" touch "$img:/touched$r" && t1=$(now)
		echo "$t1 - $t0" | bc >>"$root/w"
		t0=$(now) && "$BIN/ddfs" snapshot create "$img" "r$r" && t1=$(now)
		echo "$t1 - $t0" | bc >>"$root/c"
		"$BIN/ddfs" snapshot delete "$img" "r$r"
	done
	c=$(median <"$root/c") f=$(median <"$root/f") w=$(median <"$root/w")
	# A snapshot that alone holds every file: its delete frees the whole tree.
	"$BIN/ddfs" snapshot create "$img" all
	t0=$(now) && "$BIN/ddfs" snapshot list "$img" >/dev/null && t1=$(now)
	l1=$(echo "$t1 - $t0" | bc) # one snapshot: its referenced bytes walk its tree
	for k in 2 3 4 5; do # four more, a file apart: their shared leaves are read once
		"$BIN/ddfs" touch "$img:/list$k" && "$BIN/ddfs" snapshot create "$img" "all$k"
	done
	t0=$(now) && "$BIN/ddfs" snapshot list "$img" >/dev/null && t1=$(now)
	l5=$(echo "$t1 - $t0" | bc)
	"$BIN/ddfs" snapshot delete "$img" all2 all3 all4 all5
	"$BIN/ddfs" rm -r "$img:/d0" >/dev/null 2>&1 || true
	for d in $("$BIN/ddfs" ls "$img:/"); do "$BIN/ddfs" rm -r "$img:/$d"; done
	t0=$(now) && /usr/bin/time -o "$root/m" -f %M "$BIN/ddfs" snapshot delete "$img" all && t1=$(now)
	printf '%-10d %10.3f %10.3f %10.3f %14.3f %12.3f %12.3f %10.3f %14d\n' "$n" "$c" "$f" "$w" "$(echo "$c - $w" | bc)" "$l1" "$l5" "$(echo "$t1 - $t0" | bc)" "$(cat "$root/m")"
	"$BIN/fsck.ddfs" -q "$img"
	rm -f "$img"
done
