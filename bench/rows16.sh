#!/usr/bin/env bash
# bench/rows16.sh — the rows issue 16 says ddfs loses, interleaved in one run
# against their peers and against a baseline build of ddfs (BASE, e.g. main's
# bin/), so before/after and ddfs/peer ratios come from the same noise:
#   build   100k small files (bench/gen, 0-8 KiB): mkfs.ddfs -r | mkfs.erofs | mke2fs -d (+ sync -f)
#   du -s   of the 100k image | host du -s of the source
#   cp -a   the Go tree out of an image | host cp -a (warm), into a folder of
#           the work disk emptied by rm -rf before each run (cp-a-go), into a
#           fresh ext4 made (loop image, untimed) before each run (cp-a-fresh),
#           and into /dev/shm (cp-a-shm): right after an rm -rf of 15,000
#           files, ext4's inode allocator skips the recently deleted ones
#           (kernel time 0.3 -> 5 s for either tool), so cp-a-go measures
#           that more than the tools; the other two do not have it
#   tar     ddfs tar-out | cat | tar -cf - | cat (warm)
# Environment: BIN (bin), BASE (a second ddfs build, optional), RUNS (3), GO, D1
# (the tree, default `go env GOROOT`). Output: bench/results/rows16-latest.txt.
# shellcheck disable=SC2016
set -euo pipefail
export LC_ALL=C PATH="$PATH:/usr/sbin:/sbin"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
RUNS=${RUNS:-3} GO=${GO:-go} BIN=$(cd "${BIN:-$ROOT/bin}" && pwd) BASE=${BASE:-}
D1=${D1:-$("$GO" env GOROOT)}
LOAD=$(cat /proc/loadavg)
W=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-rows16.XXXXXX")
trap 'mountpoint -q "$W/m" && umount "$W/m"; rm -rf "$W" /dev/shm/ddfs-rows16-out' EXIT
OUT=$ROOT/bench/results/rows16-latest.txt
"$GO" build -o "$W/gen" "$ROOT/bench/gen"
"$W/gen" small -dirs 100 -files 1000 -max 8192 -nest 100 "$W/src"
cp -a "$D1" "$W/go"
SZ=$(($(du -sk --apparent-size "$W/src" | cut -f1) * 3 / 1024 + 1024))M
"$BIN/mkfs.ddfs" -q -b "$SZ" -r "$W/src" "$W/s.img"
"$BIN/mkfs.ddfs" -q -b 1G -r "$W/go" "$W/go.img"
export W SZ

# row NAME then TOOLS / SETUPS / CMDS arrays: RUNS interleaved runs; median wall
# seconds and the largest peak RSS per tool; ratios to the first tool.
declare -a LINES
row() {
	local name=$1 i r n=${#TOOLS[@]} line
	declare -A ts rs
	for ((r = 0; r < RUNS; r++)); do
		for ((i = 0; i < n; i++)); do
			eval "${SETUPS[$i]}" >/dev/null 2>&1 || true
			/usr/bin/time -f '%e %M' -o "$W/t" sh -c "${CMDS[$i]}" >/dev/null 2>"$W/err" </dev/null ||
				echo "rows16: $name ${TOOLS[$i]} failed: $(head -c 200 "$W/err")" >&2
			read -r e m < <(tail -n 1 "$W/t")
			ts[$i]+="$e " rs[$i]+="$m "
		done
	done
	local first
	first=$(printf '%s\n' ${ts[0]} | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	line=$(printf '%-8s' "$name")
	for ((i = 0; i < n; i++)); do
		local med rss
		med=$(printf '%s\n' ${ts[$i]} | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
		rss=$(printf '%s\n' ${rs[$i]} | sort -g | tail -n 1)
		line+=$(printf ' | %s %ss %sMiB' "${TOOLS[$i]}" "$med" $((rss / 1024)))
		[[ $i -gt 0 ]] && line+=$(awk -v a="$first" -v b="$med" 'BEGIN { printf " (ddfs/this %.2f)", a / b }')
	done
	LINES+=("$line") && echo "$line"
}
base() { # base LABEL SETUP CMD: adds the baseline build's column when BASE is set
	[[ -n $BASE ]] || return 0
	TOOLS+=("$1") SETUPS+=("$2") CMDS+=("${3//"$BIN"/"$BASE"}")
}
TOOLS=(ddfs) SETUPS=('rm -f $W/b.img') CMDS=("$BIN/mkfs.ddfs -q -b \$SZ -r \$W/src \$W/b.img && sync -f \$W/b.img")
base "ddfs BASE" 'rm -f $W/b.img' "$BIN/mkfs.ddfs -q -b \$SZ -r \$W/src \$W/b.img && sync -f \$W/b.img"
TOOLS+=(mkfs.erofs "mke2fs -d") SETUPS+=('rm -f $W/e.img' 'rm -f $W/x.img')
CMDS+=('mkfs.erofs --quiet $W/e.img $W/src && sync -f $W/e.img' 'mke2fs -q -F -t ext4 -N 210000 -d $W/src $W/x.img $SZ && sync -f $W/x.img')
row build
TOOLS=(ddfs) SETUPS=(:) CMDS=("$BIN/ddfs du -s \$W/s.img:/")
base "ddfs BASE" : "$BIN/ddfs du -s \$W/s.img:/"
TOOLS+=("du -s") SETUPS+=(:) CMDS+=('du -s $W/src')
row du-100k
TOOLS=(ddfs) SETUPS=('rm -rf $W/out') CMDS=("$BIN/ddfs cp -a \$W/go.img:/ \$W/out")
base "ddfs BASE" 'rm -rf $W/out' "$BIN/ddfs cp -a \$W/go.img:/ \$W/out"
TOOLS+=("cp -a") SETUPS+=('rm -rf $W/out') CMDS+=('cp -a $W/go $W/out')
row cp-a-go
mkdir -p "$W/m"
# freshext: an empty ext4 at $W/m, made anew (not timed), and synced: the
# inode tables mkfs.ext4 zeroes (256 MiB) were otherwise written back
# during the timed copy (0.29-0.50 s runs of one binary).
freshext() {
	mountpoint -q "$W/m" && umount "$W/m"
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$W/ext.img" 2G && mount -o loop "$W/ext.img" "$W/m" && sync
}
export -f freshext
TOOLS=(ddfs) SETUPS=('freshext') CMDS=("$BIN/ddfs cp -a \$W/go.img:/ \$W/m/out")
base "ddfs BASE" 'freshext' "$BIN/ddfs cp -a \$W/go.img:/ \$W/m/out"
TOOLS+=("cp -a") SETUPS+=('freshext') CMDS+=('cp -a $W/go $W/m/out')
row cp-a-fresh
S=/dev/shm/ddfs-rows16-out
TOOLS=(ddfs) SETUPS=("rm -rf $S") CMDS=("$BIN/ddfs cp -a \$W/go.img:/ $S")
base "ddfs BASE" "rm -rf $S" "$BIN/ddfs cp -a \$W/go.img:/ $S"
TOOLS+=("cp -a") SETUPS+=("rm -rf $S") CMDS+=("cp -a \$W/go $S")
row cp-a-shm
TOOLS=(ddfs) SETUPS=(:) CMDS=("$BIN/ddfs tar-out \$W/go.img | cat >/dev/null")
base "ddfs BASE" : "$BIN/ddfs tar-out \$W/go.img | cat >/dev/null"
TOOLS+=("tar -c") SETUPS+=(:) CMDS+=('tar -cf - -C $W/go . | cat >/dev/null')
row tar-go
TOOLS=(ddfs) SETUPS=(:) CMDS=("$BIN/ddfs du -s \$W/go.img:/")
base "ddfs BASE" : "$BIN/ddfs du -s \$W/go.img:/"
TOOLS+=("du -s") SETUPS+=(:) CMDS+=('du -s $W/go')
row du-go
{
	echo "# bench/rows16.sh $(date -u +%Y-%m-%d), $(nproc) cores, RUNS=$RUNS interleaved; loadavg at start: $LOAD"
	echo "# BIN=$BIN${BASE:+ BASE=$BASE}; median wall s, largest peak RSS; (ddfs/this) = first column's time over this one's"
	printf '%s\n' "${LINES[@]}"
} >"$OUT"
echo "wrote $OUT"
