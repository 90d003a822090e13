#!/usr/bin/env bash
# Send/receive benchmark (issue 39): D1 (a copy of /usr/local/go) in a ddfs image and in
# a loop-mounted btrfs, then:
#   snapshot   ddfs snapshot create vs btrfs subvolume snapshot -r (one snapshot each run)
#   full       ddfs send IMG@s1 | ddfs receive NEW.img  vs  btrfs send | btrfs receive
#              (into a second loop btrfs), and ddfs send alone vs ddfs tar-out of the
#              same tree (the issue's yardstick: send >= 0.9x tar-out's speed)
#   zstd       the tree in images that compress: send | receive, plain and --compressed-data
#   incr       1% of the files rewritten (every 100th file, whole): send --parent | receive
#              vs btrfs send -p | btrfs receive vs rsync -a --inplace between two folders
# Runs are interleaved (ddfs, btrfs, ...); medians of RUNS; stream bytes are what each
# sender wrote; max RSS is the worst run's (btrfs: the userspace tools; rsync: both ends).
# Needs root for the loop mounts; the btrfs peer is skipped with a note otherwise.
#
# SET=d2 runs the same on a D2-like set (BENCH.md): COPIES (4) copies of D1 and COPIES VM-like
# files of VM_SIZE (256M) from `gen big`, in 8 GiB images; results in send-d2-latest.txt.
#
# Environment: BIN (bin), D1 (/usr/local/go), RUNS (3), SET (d1), COPIES, VM_SIZE, TMPDIR (/tmp).
# Output: the table on stdout and in bench/results/send-latest.txt (send-d2-latest.txt).
set -euo pipefail
export LC_ALL=C PATH="$PATH:/usr/sbin:/sbin"
BIN=${BIN:-bin}
D1=${D1:-/usr/local/go}
RUNS=${RUNS:-3}
SET=${SET:-d1}
COPIES=${COPIES:-4}
VM_SIZE=${VM_SIZE:-256M}
SIZE=4G
[[ $SET == d2 ]] && SIZE=8G
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=$(cd "$BIN" && pwd)
root=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-send.XXXXXX")
loops=()
cleanup() {
	for m in "$root"/mnt*; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
	for l in "${loops[@]}"; do losetup -d "$l" 2>/dev/null || true; done
	rm -rf "$root"
}
trap cleanup EXIT
note() { echo "  note: $*"; }
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
# timed NAME CMD...: wall seconds to t-NAME, max RSS (KiB) to m-NAME.
timed() {
	local n=$1 t0 t1
	shift
	sync
	t0=$(now)
	/usr/bin/time -a -o "$root/m-$n" -f %M bash -c "$*"
	t1=$(now)
	echo "$t1 - $t0" | bc >>"$root/t-$n"
}
out=$HERE/results/send-latest.txt
[[ $SET == d2 ]] && out=$HERE/results/send-d2-latest.txt
mkdir -p "$HERE/results"
exec > >(tee "$out")

command -v rsync >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends rsync >/dev/null 2>&1 || true
command -v rsync >/dev/null || { echo "send.sh: rsync is missing" >&2; exit 1; }
if [[ $SET == d2 ]]; then
	mkdir -p "$root/d1"
	for i in $(seq 1 "$COPIES"); do cp -a "$D1" "$root/d1/go$i"; done
	go build -o "$root/gen" "$HERE/gen"
	"$root/gen" big -seed 7 -n "$COPIES" -size "$VM_SIZE" "$root/d1/vm" >/dev/null
else
	cp -a "$D1" "$root/d1"
fi
files=$(find "$root/d1" -type f | wc -l)
echo "# send/receive benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $SET from $D1: $files files, $(du -sh "$root/d1" | cut -f1), runs=$RUNS"
"$BIN/mkfs.ddfs" -q -b "$SIZE" -r "$root/d1" "$root/a.img"

btrfs_ok=0
if [[ $(id -u) -eq 0 ]] && command -v losetup >/dev/null; then
	command -v mkfs.btrfs >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends btrfs-progs >/dev/null 2>&1 || true
fi
btrfs_fs() { # btrfs_fs NAME: a $SIZE loop btrfs mounted at $root/mnt-NAME
	truncate -s "$SIZE" "$root/$1.btrfs"
	local l
	l=$(losetup -f --show "$root/$1.btrfs") && loops+=("$l") && mkfs.btrfs -q -f "$l" >/dev/null 2>&1 &&
		mkdir -p "$root/mnt-$1" && mount "$l" "$root/mnt-$1"
}
if [[ $(id -u) -eq 0 ]] && command -v mkfs.btrfs >/dev/null && btrfs_fs src && btrfs_fs dst; then
	btrfs subvolume create "$root/mnt-src/vol" >/dev/null && cp -a "$root/d1/." "$root/mnt-src/vol/" && sync
	btrfs_ok=1
fi
[[ $btrfs_ok -eq 1 ]] || note "btrfs peer skipped (needs root, losetup, btrfs-progs)"
echo "# load average before the runs: $(load)"

# btrfs drops a deleted subvolume in a kernel thread after the delete returns: wait for
# it, or it runs inside the next timed runs (ddfs's included: they measured 2x slower).
btrfs_settle() { btrfs subvolume sync "$root/mnt-dst" >/dev/null 2>&1 || true; sync; }

# Snapshots of the unchanged tree, then the full streams (a fresh receiver each run).
"$BIN/ddfs" snapshot create "$root/a.img" s1
[[ $btrfs_ok -eq 1 ]] && btrfs subvolume snapshot -r "$root/mnt-src/vol" "$root/mnt-src/s1" >/dev/null
for r in $(seq "$RUNS"); do
	timed snap-ddfs "'$BIN/ddfs' snapshot create '$root/a.img' t$r"
	[[ $btrfs_ok -eq 1 ]] && timed snap-btrfs "btrfs subvolume snapshot -r '$root/mnt-src/vol' '$root/mnt-src/t$r' >/dev/null"
	rm -f "$root/b.img"
	"$BIN/mkfs.ddfs" -q -b "$SIZE" "$root/b.img"
	timed full-ddfs "'$BIN/ddfs' send '$root/a.img@s1' | tee >(wc -c >'$root/sz-full-ddfs') | '$BIN/ddfs' receive -q '$root/b.img'"
	timed tarout-ddfs "'$BIN/ddfs' tar-out '$root/a.img@s1:/' | cat >/dev/null"
	timed sendonly-ddfs "'$BIN/ddfs' send '$root/a.img@s1' | cat >/dev/null"
	if [[ $btrfs_ok -eq 1 ]]; then
		btrfs subvolume delete "$root/mnt-dst/s1" >/dev/null 2>&1 || true
		btrfs_settle
		timed full-btrfs "btrfs send -q '$root/mnt-src/s1' | tee >(wc -c >'$root/sz-full-btrfs') | btrfs receive '$root/mnt-dst' >/dev/null 2>&1"
	fi
done
"$BIN/ddfs" diff -r "$root/a.img@s1:/" "$root/b.img@s1:/" >/dev/null

# The same tree in images that compress (zstd): the stream plain, and with
# --compressed-data (frames as stored; the receiver keeps them).
"$BIN/mkfs.ddfs" -q -b "$SIZE" --compress zstd -r "$root/d1" "$root/z.img"
"$BIN/ddfs" snapshot create "$root/z.img" s1
for r in $(seq "$RUNS"); do
	for how in plain enc; do
		rm -f "$root/zr.img"
		"$BIN/mkfs.ddfs" -q -b "$SIZE" --compress zstd "$root/zr.img"
		flag=
		[[ $how == enc ]] && flag=--compressed-data
		timed "z$how-ddfs" "'$BIN/ddfs' send $flag '$root/z.img@s1' | tee >(wc -c >'$root/sz-z$how-ddfs') | '$BIN/ddfs' receive -q '$root/zr.img'"
	done
done
"$BIN/ddfs" diff -r "$root/z.img@s1:/" "$root/zr.img@s1:/" >/dev/null

# 1% of the files rewritten, the same in each peer; incremental streams.
find "$root/d1" -type f | sort | awk 'NR % 100 == 0' >"$root/changed"
mkdir -p "$root/new"
while read -r f; do
	rel=${f#"$root/d1/"}
	mkdir -p "$root/new/$(dirname "$rel")"
	{ head -c 100 "$f"; echo "changed"; tail -c +101 "$f"; } >"$root/new/$rel"
done <"$root/changed"
"$BIN/ddfs" cp -a "$root/new/." "$root/a.img:/"
"$BIN/ddfs" snapshot create "$root/a.img" s2
cp -a "$root/d1" "$root/rsync-dst"
cp -a "$root/d1" "$root/rsync-src" && cp -a "$root/new/." "$root/rsync-src/"
if [[ $btrfs_ok -eq 1 ]]; then
	cp -a "$root/new/." "$root/mnt-src/vol/" && sync
	btrfs subvolume snapshot -r "$root/mnt-src/vol" "$root/mnt-src/s2" >/dev/null
	btrfs send -q "$root/mnt-src/s1" 2>/dev/null | btrfs receive "$root/mnt-dst" >/dev/null 2>&1 || true
	btrfs_settle
fi
for r in $(seq "$RUNS"); do
	"$BIN/ddfs" snapshot delete "$root/b.img" s2 >/dev/null 2>&1 || true
	timed incr-ddfs "'$BIN/ddfs' send --parent '$root/a.img@s1' '$root/a.img@s2' | tee >(wc -c >'$root/sz-incr-ddfs') | '$BIN/ddfs' receive -q '$root/b.img'"
	if [[ $btrfs_ok -eq 1 ]]; then
		btrfs subvolume delete "$root/mnt-dst/s2" >/dev/null 2>&1 || true
		btrfs_settle
		timed incr-btrfs "btrfs send -q -p '$root/mnt-src/s1' '$root/mnt-src/s2' | tee >(wc -c >'$root/sz-incr-btrfs') | btrfs receive '$root/mnt-dst' >/dev/null 2>&1"
	fi
	rm -rf "$root/rsync-dst" && cp -a "$root/d1" "$root/rsync-dst"
	timed incr-rsync "rsync -a --inplace --stats '$root/rsync-src/' '$root/rsync-dst/' | awk '/Total bytes sent/ {gsub(\",\",\"\",\$4); print \$4}' >'$root/sz-incr-rsync'"
done
"$BIN/ddfs" diff -r "$root/a.img@s2:/" "$root/b.img@s2:/" >/dev/null
"$BIN/fsck.ddfs" -q "$root/b.img"
echo "# load average after the runs: $(load)"

printf '%-52s %9s %14s %12s\n' run seconds "stream bytes" "max RSS KiB"
row() { # row LABEL NAME
	[[ -s "$root/t-$2" ]] || return 0
	local sz=-
	[[ -s "$root/sz-$2" ]] && sz=$(cat "$root/sz-$2")
	printf '%-52s %9.3f %14s %12d\n' "$1" "$(median <"$root/t-$2")" "$sz" "$(sort -n "$root/m-$2" | tail -1)"
}
row "ddfs snapshot create" snap-ddfs
row "btrfs subvolume snapshot -r" snap-btrfs
row "ddfs send | ddfs receive (full)" full-ddfs
row "btrfs send | btrfs receive (full)" full-btrfs
row "ddfs tar-out | cat (the same tree)" tarout-ddfs
row "ddfs send | cat (the same tree)" sendonly-ddfs
row "zstd images: ddfs send | ddfs receive" zplain-ddfs
row "zstd images: send --compressed-data | receive" zenc-ddfs
row "ddfs send -p | ddfs receive (1% of files changed)" incr-ddfs
row "btrfs send -p | btrfs receive (1% changed)" incr-btrfs
row "rsync -a --inplace (1% changed)" incr-rsync
ratio() { echo "scale=2; $(median <"$root/t-$1") / $(median <"$root/t-$2")" | bc; }
if [[ $btrfs_ok -eq 1 ]]; then
	echo "  -> full send|receive: ddfs/btrfs = $(ratio full-ddfs full-btrfs)x (target <= 1.0)"
	echo "  -> incremental send|receive: ddfs/btrfs = $(ratio incr-ddfs incr-btrfs)x (target <= 1.0); stream ddfs/btrfs = $(echo "scale=2; $(cat "$root/sz-incr-ddfs") / $(cat "$root/sz-incr-btrfs")" | bc)x"
fi
echo "  -> incremental: ddfs/rsync --inplace = $(ratio incr-ddfs incr-rsync)x"
echo "  -> --compressed-data: time $(ratio zenc-ddfs zplain-ddfs)x, stream $(echo "scale=2; $(cat "$root/sz-zenc-ddfs") / $(cat "$root/sz-zplain-ddfs")" | bc)x of the plain stream's"
echo "  -> send speed / tar-out speed = $(ratio tarout-ddfs sendonly-ddfs)x (target >= 0.9)"
