#!/usr/bin/env bash
# dedupe-tool against duperemove (issue 14), side by side in one run.
# The backup-like set (COPIES x the Go tree + COPIES VM-like files of
# VM_SIZE whose 128 KiB blocks repeat 75%) is written without dedupe into a
# ddfs image and into a loop-mounted btrfs; then `dedupe-tool run` vs
# `duperemove -dr` and `duperemove -dr --dedupe-options=partial -b 128K`
# (each on a fresh copy): wall time, peak RSS, bytes freed. Then
# `dedupe-tool estimate` vs `duperemove -r` (no -d) on the host folder, and
# default `--dedupe` vs none on DUP_SIZE of 75%-dup and of unique data.
# Needs root (loop mount) and apt-get for duperemove.
set -euo pipefail
BIN=${BIN:-bin}
COPIES=${COPIES:-4}
GO_TREE=${GO_TREE:-$(go env GOROOT)/src}
VM_SIZE=${VM_SIZE:-256M}
DUP_SIZE=${DUP_SIZE:-1G}
root=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-dtool.XXXXXX")
mnt=$root/mnt
cleanup() { mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"; rm -rf "$root"; }
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
echo "# dedupe-tool benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(duperemove --version 2>&1 | head -1), load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## set: $((in_bytes / 1000000)) MB ($COPIES x $(basename "$GO_TREE") tree + $COPIES x $VM_SIZE VM-like, 75% dup 128 KiB blocks)"

# timed LABEL CMD...: runs CMD under /usr/bin/time; sets secs and rss_kb.
timed() {
	local label=$1; shift
	/usr/bin/time -f '%e %M' -o "$root/time" "$@" >"$root/out" 2>"$root/err" || { echo "$label: FAIL"; cat "$root/err"; return 1; }
	read -r secs rss_kb <"$root/time"
}
row() { # LABEL FREED BEFORE
	printf '%-46s %7.2f s  peak RSS %6d MB  freed %7.1f MB = %5.1f%% of the data\n' "$1" "$secs" "$((rss_kb / 1024))" "$(echo "$2 / 1000000" | bc -l)" "$(echo "100 * $2 / $3" | bc -l)"
}

# ddfs: written without dedupe, then dedupe-tool run.
img=$root/d.img
"$BIN/mkfs.ddfs" -q -b 8G -r "$set_dir" "$img"
before=$("$BIN/dedupe-tool" status --json "$img" | awk -F'[:,]' '/"physical_bytes"/{print $2+0}')
sync
timed "dedupe-tool run" "$BIN/dedupe-tool" run --json "$img"
freed=$(awk -F'[:,]' '/"freed_bytes"/{print $2+0}' "$root/out")
after=$("$BIN/dedupe-tool" status --json "$img" | awk -F'[:,]' '/"physical_bytes"/{print $2+0}')
[ "$((before - after))" = "$freed" ] || echo "  MISMATCH: status says $((before - after)) freed, run says $freed"
row "dedupe-tool run" "$freed" "$before"; ddfs_t=$secs; ddfs_rss=$rss_kb
echo "  (read and passed through dedupe $(awk -F'[:,]' '/"rewritten_bytes"/{printf "%.1f", $2/1000000}' "$root/out") MB, of it indexed in place $(awk -F'[:,]' '/"adopted_bytes"/{printf "%.1f", $2/1000000}' "$root/out") MB; left unread by the stored-checksum prefilter $(awk -F'[:,]' '/"prefiltered_bytes"/{printf "%.1f", $2/1000000}' "$root/out") MB)"
"$BIN/fsck.ddfs" -q "$img" >/dev/null || echo "  fsck.ddfs after run: NOT clean"
timed "dedupe-tool run (again)" "$BIN/dedupe-tool" run --json "$img"
row "dedupe-tool run, second time" "$(awk -F'[:,]' '/"freed_bytes"/{print $2+0}' "$root/out")" "$before"
rm -f "$img"

# btrfs: a fresh loop-mounted copy per duperemove mode.
btrfs_used() { btrfs filesystem sync "$mnt" >/dev/null; btrfs filesystem df -b "$mnt" | awk '/^Data/{for(i=1;i<=NF;i++) if($i ~ /^used=/){sub("used=","",$i); print $i}}'; }
duperemove_case() { # LABEL ARGS...
	local label=$1; shift
	truncate -s 8G "$root/b.img"
	mkfs.btrfs -q -f "$root/b.img"
	mount -o loop "$root/b.img" "$mnt"
	cp -a "$set_dir/." "$mnt/"
	sync
	local b; b=$(btrfs_used)
	timed "$label" duperemove "$@" -r --hashfile="$root/hashes" "$mnt"
	local a; a=$(btrfs_used)
	row "$label" "$((b - a))" "$b"
	umount "$mnt"; rm -f "$root/b.img" "$root/hashes"
}
duperemove_case "duperemove -dr" -d
duperemove_case "duperemove -dr --dedupe-options=partial -b 128K" -d --dedupe-options=partial -b 128K; part_t=$secs; part_rss=$rss_kb
echo "  -> dedupe-tool run took $(echo "scale=2; $ddfs_t / $part_t" | bc)x the time of duperemove partial (target < 1), $(echo "scale=2; $ddfs_rss / $part_rss" | bc)x its peak RSS (target <= 1)"

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
# cp_pair FILE: off and --dedupe (defaults) interleaved, 5 rounds, so load
# changes hit both; sets off and on to the medians (seconds).
cp_once() { # FILE MKFS_ARGS...: seconds of one ddfs cp
	local file=$1; shift
	rm -f "$root/c.img"; "$BIN/mkfs.ddfs" -q -b $((dup * 2)) "$@" "$root/c.img"; sync
	local t0 t1; t0=$(date +%s.%N); "$BIN/ddfs" cp "$file" "$root/c.img:/x"; t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc
}
cp_pair() {
	local offs=() ons=()
	for _ in 1 2 3 4 5; do
		offs+=("$(cp_once "$1")"); ons+=("$(cp_once "$1" --dedupe)")
	done
	off=$(printf '%s\n' "${offs[@]}" | sort -n | sed -n 3p)
	on=$(printf '%s\n' "${ons[@]}" | sort -n | sed -n 3p)
}
cp_pair "$root/dup75"
echo "75% dup, $DUP_SIZE: off $off s, --dedupe (defaults) $on s -> $(echo "scale=2; $off / $on" | bc)x (target >= 1.35; medians of 5 interleaved)"
cp_pair "$root/uniq"
echo "unique, $DUP_SIZE: off $off s, --dedupe (defaults) $on s -> $(echo "scale=1; 100 * ($on - $off) / $off" | bc)% slower (target <= 10%; medians of 5 interleaved)"
rm -f "$root/c.img"
