#!/usr/bin/env bash
# bench/tiered.sh — the tiered allocator's metadata-heavy workload (issue 6).
#
# On 2 "SSD" + 2 "HDD" sparse image files (device properties from mkfs specs:
# HDDs rotational, 120 seeks/s, 150 MiB/s), data raid1, metadata raid1, for each
# policy classic, ssd-metadata and tiered:
#   1. copy in a tree of FILES small files (bench/gen small, 0-4 KiB, 1000 a dir)
#   2. modify 10% of them (every 10th file, rewritten through tar-in)
#   3. remove another 10% (ddfs rm, 1000 operands a command)
# and report, summed over the steps from `ddfs ... --stats=json`: seeks on the
# rotational devices, modeled device time (seeks/seek_speed + bytes/bandwidth,
# summed over devices, and the HDDs' share), wall time, and the metadata
# (and system) bytes allocated on rotational devices at the end
# (`ddfs device usage --json`); ratios against classic.
#
# Environment:
#   BIN     directory with mkfs.ddfs and ddfs (default: bin)
#   FILES   number of small files (default: 100000; a multiple of 1000)
#   SSD_SIZE, HDD_SIZE  sizes of the sparse image files (default: 4G and 16G;
#           HDDs bigger than SSDs, as usual, so classic's most-free-space rule
#           puts metadata on them)
#   TMPDIR  scratch directory parent (default: /tmp)
#   GO      go command that builds bench/gen (default: go)
# Needs jq. Not part of `make test`; `make bench` runs it.
set -euo pipefail
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${BIN:-bin}
[[ -d "$BIN" ]] || BIN="$ROOT/$BIN"
BIN=$(cd "$BIN" && pwd)
FILES=${FILES:-100000}
SSD_SIZE=${SSD_SIZE:-4G}
HDD_SIZE=${HDD_SIZE:-16G}
GO=${GO:-go}
command -v jq >/dev/null || { echo "tiered.sh: needs jq" >&2; exit 1; }
((FILES % 1000 == 0 && FILES > 0)) || { echo "tiered.sh: FILES must be a multiple of 1000" >&2; exit 2; }

W=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-tiered.XXXXXX")
trap 'rm -rf "$W"' EXIT
(cd "$ROOT" && "$GO" build -o "$W/gen" ./bench/gen)
DIRS=$((FILES / 1000))
"$W/gen" small -seed 1 -dirs "$DIRS" -files 1000 -max 4096 "$W/src" >/dev/null
# The modified tenth: every 10th file with new contents, same paths.
(cd "$W/src" && find . -type f | sort | awk 'NR % 10 == 0') >"$W/mod.list"
(cd "$W/src" && find . -type f | sort | awk 'NR % 10 == 5') >"$W/rm.list"
mkdir -p "$W/mod"
while read -r f; do
	mkdir -p "$W/mod/$(dirname "$f")"
	printf 'modified %s\n' "$f" >"$W/mod/$f"
done <"$W/mod.list"

now() { date +%s.%N; }

# stats FILE...: sums of rotational seeks, modeled seconds (all, HDDs) over
# every --stats=json line in the files.
stats() {
	cat "$@" | grep '^{"io"' | jq -s '[.[].io[]] | {
		rot_seeks: ([.[] | select(.rotational) | .seeks] | add // 0),
		rot_bytes: ([.[] | select(.rotational) | .read_bytes + .write_bytes] | add // 0),
		modeled: ([.[].modeled_seconds] | add // 0),
		rot_modeled: ([.[] | select(.rotational) | .modeled_seconds] | add // 0)}'
}

declare -A RS RM RH WALL META
for policy in classic ssd-metadata tiered; do
	d="$W/$policy"
	mkdir -p "$d"
	hdd="rotational=1,seek_speed=120,bandwidth=150M"
	truncate -s "$SSD_SIZE" "$d/s0.img" "$d/s1.img"
	truncate -s "$HDD_SIZE" "$d/h0.img" "$d/h1.img"
	"$BIN/mkfs.ddfs" -q -d raid1 -m raid1 --alloc-policy "$policy" \
		"$d/s0.img" "$d/s1.img" "$d/h0.img:$hdd" "$d/h1.img:$hdd"
	t0=$(now)
	"$BIN/ddfs" cp -r --stats=json "$W/src" "$d/s0.img:/" 2>"$d/1.json"
	(cd "$W/mod" && tar -cf - .) | "$BIN/ddfs" tar-in --stats=json "$d/s0.img:/src" 2>"$d/2.json"
	sed "s|^\./|$d/s0.img:/src/|" "$W/rm.list" | xargs -n 1000 "$BIN/ddfs" rm --stats=json 2>"$d/3.json"
	t1=$(now)
	s=$(stats "$d"/[123].json)
	RS[$policy]=$(jq .rot_seeks <<<"$s")
	RM[$policy]=$(jq .modeled <<<"$s")
	RH[$policy]=$(jq .rot_modeled <<<"$s")
	WALL[$policy]=$(echo "$t1 - $t0" | bc -l)
	META[$policy]=$("$BIN/ddfs" device usage --json "$d/s0.img" | jq '[.[] | select(.rotational) | .types[] | select(.type == "metadata" or .type == "system") | .allocated] | add // 0')
	echo "tiered.sh: $policy done" >&2
	rm -f "$d"/*.img
done

ratio() { echo "$1 $2" | awk '{ if ($2 == 0) print "-"; else printf "%.2fx", $1 / $2 }'; }
printf 'Tiered allocator workload: %d files copied in, %d modified, %d removed; 2 SSD images of %s + 2 HDD images of %s, raid1/raid1\n\n' \
	"$FILES" "$(wc -l <"$W/mod.list")" "$(wc -l <"$W/rm.list")" "$SSD_SIZE" "$HDD_SIZE"
printf '%-13s %14s %12s %14s %14s %10s %16s\n' policy "meta on HDD" "HDD seeks" "modeled s" "HDD modeled s" "wall s" "modeled vs classic"
for p in classic ssd-metadata tiered; do
	printf '%-13s %14s %12s %14.2f %14.2f %10.2f %16s\n' "$p" "${META[$p]}" "${RS[$p]}" "${RM[$p]}" "${RH[$p]}" "${WALL[$p]}" "$(ratio "${RM[classic]}" "${RM[$p]}")"
done
