#!/usr/bin/env bash
# dedupe-tool against duperemove (issue 14), side by side in one run.
# The backup-like set D2 of ../shared/BENCH.md (COPIES x the Go tree D1,
# all of GOROOT: 15,036 files with the toolchain's binaries, + COPIES
# VM-like files of VM_SIZE whose 128 KiB blocks repeat 75%; GO_TREE
# picks another tree, e.g. GOROOT/src as runs before 2026-12-03 used) is
# written without dedupe into a
# ddfs image and into a loop-mounted btrfs; then `dedupe-tool run` vs
# `duperemove -dr` and `duperemove -dr --dedupe-options=partial -b 128K`
# (each on a fresh copy): wall time, peak RSS, bytes freed; dedupe-tool
# run on mkfs's default crc32c sums and on --csum blake3 sums. Then
# `dedupe-tool estimate` vs `duperemove -r` (no -d) on the host folder, and
# default `--dedupe` vs none on DUP_SIZE of 75%-dup and of unique data.
# Needs root (loop mount) and apt-get for duperemove.
set -euo pipefail
BIN=${BIN:-bin}
COPIES=${COPIES:-4}
GO_TREE=${GO_TREE:-$(go env GOROOT)}
VM_SIZE=${VM_SIZE:-256M}
DUP_SIZE=${DUP_SIZE:-1G}
root=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-dtool.XXXXXX")
# IMG_DIR holds the images (the ddfs ones and btrfs's loop file): $root
# on disk by default; IMG_DIR=/dev/shm takes the host disk's speed, which
# moves from day to day on this VM, out of both sides.
img_dir=$(mktemp -d "${IMG_DIR:-$root}/ddfs-dtool-img.XXXXXX")
mnt=$root/mnt
cleanup() { mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"; rm -rf "$img_dir" "$root"; }
trap cleanup EXIT
if ! command -v duperemove >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq duperemove >/dev/null
fi
go build -o "$root/dedupegen" ./bench/dedupegen
set_dir=$root/set
mkdir -p "$set_dir" "$mnt"
for i in $(seq "$COPIES"); do cp -a "$GO_TREE" "$set_dir/go$i"; done
vm=$(numfmt --from=iec "$VM_SIZE")
for i in $(seq "$COPIES"); do "$root/dedupegen" "$set_dir/vm$i.img" "$vm" 75 "$i"; done
in_bytes=$(du -sb --apparent-size "$set_dir" | cut -f1)
cat "$set_dir"/vm* >/dev/null
echo "# dedupe-tool benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), images in $img_dir ($(stat -f -c %T "$img_dir")), $(nproc) cores, $(duperemove --version 2>&1 | head -1), load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## set: $((in_bytes / 1000000)) MB in $(find "$set_dir" -type f | wc -l) files ($COPIES x $GO_TREE + $COPIES x $VM_SIZE VM-like, 75% dup 128 KiB blocks)"

# timed LABEL CMD...: runs CMD under /usr/bin/time; sets secs and rss_kb.
timed() {
	local label=$1; shift
	/usr/bin/time -f '%e %M' -o "$root/time" "$@" >"$root/out" 2>"$root/err" || { echo "$label: FAIL"; cat "$root/err"; return 1; }
	read -r secs rss_kb <"$root/time"
}
row() { # LABEL FREED BEFORE
	printf '%-46s %7.2f s  peak RSS %6d MB  freed %7.1f MB = %5.1f%% of the data\n' "$1" "$secs" "$((rss_kb / 1024))" "$(echo "$2 / 1000000" | bc -l)" "$(echo "100 * $2 / $3" | bc -l)"
}

# ddfs: written without dedupe, then dedupe-tool run; once on mkfs's
# default sums (crc32c: every candidate block is read) and once on an
# image made with --csum blake3, whose strong sums let run share repeats
# without reading them (and make every write and read sum with blake3:
# the mkfs time is shown).
ddfs_case() { # LABEL MKFS_ARGS...
	local label=$1; shift
	img=$img_dir/d.img
	local t0 t1; t0=$(date +%s.%N)
	"$BIN/mkfs.ddfs" -q -b 8G "$@" -r "$set_dir" "$img"
	t1=$(date +%s.%N)
	before=$("$BIN/dedupe-tool" status --json "$img" | awk -F'[:,]' '/"physical_bytes"/{print $2+0}')
	sync
	timed "$label" "$BIN/dedupe-tool" run --json "$img"
	freed=$(awk -F'[:,]' '/"freed_bytes"/{print $2+0}' "$root/out")
	after=$("$BIN/dedupe-tool" status --json "$img" | awk -F'[:,]' '/"physical_bytes"/{print $2+0}')
	[ "$((before - after))" = "$freed" ] || echo "  MISMATCH: status says $((before - after)) freed, run says $freed"
	row "$label" "$freed" "$before"
	field() { awk -F'[:,]' '/"'"$1"'"/{printf "%.1f", $2/1000000}' "$root/out"; }
	echo "  (mkfs -r $(echo "$t1 - $t0" | bc | xargs printf '%.2f') s; passed through dedupe $(field rewritten_bytes) MB: read $(echo "$(field rewritten_bytes) - $(field sum_shared_bytes)" | bc) MB ($(field ahead_bytes) MB of it ahead on the second core), indexed in place $(field adopted_bytes) MB, shared unread on stored strong sums $(field sum_shared_bytes) MB; left unread by the stored-checksum prefilter $(field prefiltered_bytes) MB)"
	"$BIN/fsck.ddfs" -q "$img" >/dev/null || echo "  fsck.ddfs after run: NOT clean"
}
# btrfs: a fresh loop-mounted copy per duperemove mode.
btrfs_used() { btrfs filesystem sync "$mnt" >/dev/null; btrfs filesystem df -b "$mnt" | awk '/^Data/{for(i=1;i<=NF;i++) if($i ~ /^used=/){sub("used=","",$i); print $i}}'; }
duperemove_case() { # LABEL ARGS...
	local label=$1; shift
	truncate -s 8G "$img_dir/b.img"
	mkfs.btrfs -q -f "$img_dir/b.img"
	mount -o loop "$img_dir/b.img" "$mnt"
	cp -a "$set_dir/." "$mnt/"
	sync
	local b; b=$(btrfs_used)
	timed "$label" duperemove "$@" -r --hashfile="$root/hashes" "$mnt"
	local a; a=$(btrfs_used)
	row "$label" "$((b - a))" "$b"
	umount "$mnt"; rm -f "$img_dir/b.img" "$root/hashes"
}
# The three timed contenders, RUN_ROUNDS rounds, the order turned around
# every round (A B C, C B A, ...): a run right after another pays for its
# freed blocks (the root is mounted with discard), and a fixed order put
# that on the same tool each time. Medians of the times; the largest
# peak RSS of the runs (a memory bound holds for every run).
RUN_ROUNDS=${RUN_ROUNDS:-3}
declare -A ts=() rss=()
contender() { # crc32c | blake3 | partial
	case $1 in
	crc32c) ddfs_case "dedupe-tool run (mkfs default, crc32c sums)" ;;
	blake3) ddfs_case "dedupe-tool run (mkfs --csum blake3)" --csum blake3 ;;
	partial) duperemove_case "duperemove -dr --dedupe-options=partial -b 128K" -d --dedupe-options=partial -b 128K ;;
	esac
	ts[$1]+="$secs " rss[$1]=$(( ${rss[$1]:-0} > rss_kb ? ${rss[$1]:-0} : rss_kb ))
	if [ "$1" = crc32c ] && [ -z "${again:-}" ]; then
		again=1
		timed "dedupe-tool run (again)" "$BIN/dedupe-tool" run --json "$img"
		row "dedupe-tool run, second time" "$(awk -F'[:,]' '/"freed_bytes"/{print $2+0}' "$root/out")" "$before"
	fi
	rm -f "$img_dir/d.img"
}
for ((r = 0; r < RUN_ROUNDS; r++)); do
	order="crc32c blake3 partial"
	[ $((r % 2)) = 1 ] && order="partial blake3 crc32c"
	for c in $order; do contender "$c"; done
done
duperemove_case "duperemove -dr" -d
med() { printf '%s\n' ${ts[$1]} | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ddfs_t=$(med crc32c) b3_t=$(med blake3) part_t=$(med partial)
echo "  -> medians of $RUN_ROUNDS rounds: dedupe-tool run $ddfs_t s, duperemove partial $part_t s: $(echo "scale=2; $ddfs_t / $part_t" | bc)x its time (target < 1), $(echo "scale=2; ${rss[crc32c]} / ${rss[partial]}" | bc)x its peak RSS (largest of the runs: ${rss[crc32c]} vs ${rss[partial]} KiB; target <= 1); on the blake3-summed image ($b3_t s) $(echo "scale=2; $b3_t / $part_t" | bc)x and $(echo "scale=2; ${rss[blake3]} / ${rss[partial]}" | bc)x"

# estimate vs duperemove -r (no -d) on the host folder.
timed "dedupe-tool estimate" "$BIN/dedupe-tool" estimate --json --block 128K --chunking fixed "$set_dir"
uniq=$(awk -F'[:,]' '/"unique_bytes"/{print $2+0}' "$root/out")
printf '%-46s %7.2f s  peak RSS %6d MB  duplicate %7.1f MB = %5.1f%% (128 KiB blocks)\n' "dedupe-tool estimate --block 128K" "$secs" "$((rss_kb / 1024))" "$(echo "($in_bytes - $uniq) / 1000000" | bc -l)" "$(echo "100 * ($in_bytes - $uniq) / $in_bytes" | bc -l)"
timed "duperemove -r -b 128K" duperemove -r -b 128K --hashfile="$root/hashes" "$set_dir"
printf '%-46s %7.2f s  peak RSS %6d MB  says: %s\n' "duperemove -r -b 128K (no -d)" "$secs" "$((rss_kb / 1024))" "$(grep -iE 'total|dupe|duplicate' "$root/out" | tail -2 | tr '\n' ' ')"
rm -f "$root/hashes"

# Default --dedupe vs none, 75%-dup and unique data, 2 cores.
dup=$(numfmt --from=iec "$DUP_SIZE")
"$root/dedupegen" "$root/dup75" "$dup" 75
"$root/dedupegen" "$root/uniq" "$dup" 0
cat "$root/dup75" "$root/uniq" >/dev/null
# cp_pair FILE: off and --dedupe (defaults) interleaved, ROUNDS rounds,
# so load changes hit both; sets off and on to the medians (seconds) and
# offr and onr to min-max.
ROUNDS=${ROUNDS:-11}
cp_once() { # FILE MKFS_ARGS...: seconds of one ddfs cp
	local file=$1; shift
	rm -f "$img_dir/c.img"; sync; "$BIN/mkfs.ddfs" -q -b $((dup * 2)) "$@" "$img_dir/c.img"; sync
	local t0 t1; t0=$(date +%s.%N); "$BIN/ddfs" cp "$file" "$img_dir/c.img:/x"; t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc
}
cp_pair() {
	local offs=() ons=()
	# The order turns around every round: a copy right after another
	# was slower (the root is mounted with discard; by hand on 2026-12-04
	# the second of two identical copies took 1.3-1.5x the first), and
	# off-then-on put that on --dedupe every time.
	for r in $(seq "$ROUNDS"); do
		if [ $((r % 2)) = 1 ]; then
			offs+=("$(cp_once "$1")"); ons+=("$(cp_once "$1" --dedupe)")
		else
			ons+=("$(cp_once "$1" --dedupe)"); offs+=("$(cp_once "$1")")
		fi
	done
	local mid=$(((ROUNDS + 1) / 2))
	off=$(printf '%s\n' "${offs[@]}" | sort -n | sed -n "${mid}p")
	on=$(printf '%s\n' "${ons[@]}" | sort -n | sed -n "${mid}p")
	offr=$(printf '%s\n' "${offs[@]}" | sort -n | sed -n '1p;$p' | xargs printf '%.3f-%.3f\n' | tr -d '\n')
	onr=$(printf '%s\n' "${ons[@]}" | sort -n | sed -n '1p;$p' | xargs printf '%.3f-%.3f\n' | tr -d '\n')
}
cp_pair "$root/dup75"
echo "75% dup, $DUP_SIZE: off $off s ($offr), --dedupe (defaults) $on s ($onr) -> $(echo "scale=2; $off / $on" | bc)x (target >= 1.35; medians of $ROUNDS interleaved)"
cp_pair "$root/uniq"
echo "unique, $DUP_SIZE: off $off s ($offr), --dedupe (defaults) $on s ($onr) -> $(echo "scale=1; 100 * ($on - $off) / $off" | bc)% slower (target <= 10%; medians of $ROUNDS interleaved)"
rm -f "$img_dir/c.img"
