#!/usr/bin/env bash
# bench/scale.sh — how ddfs's costs grow with the number of files and the bytes of
# data, side by side with mkfs.erofs, mke2fs -d and mkfs.btrfs -r (and their own
# read-side tools, or the host's coreutils on the source folder).
#
# Points: small files (nested directories, 1000 files each, 0..8 KiB, bench/gen small
# -nest 100) and data (files of 256 MiB of seeded random bytes, bench/gen big).
#   SCALE=small (default): 10k and 100k files, 1 GiB       — minutes
#   SCALE=medium:          10k, 100k, 1M files; 1, 4 GiB  — about an hour, ~40 GiB free
#   SCALE=full:            10k, 100k, 1M, 4M files; 1, 4, 16 GiB — hours, ~120 GiB free
#   FILE_POINTS / GIB_POINTS override the lists (e.g. FILE_POINTS="10000 100000").
#   ROWS limits the rows after build (always run: it makes the image), e.g.
#   ROWS="du-s fsck df" for a big point that must fit a time slot.
#   PEERS limits the peers (default "erofs ext4 btrfs"; mkfs.btrfs -r of 1M files
#   alone takes longer than a shared time slot).
#   NAME names the output (default $SCALE): separate runs of single points
#   (NAME=1M FILE_POINTS=1000000 GIB_POINTS=) keep their own files, and the
#   plots are drawn from every bench/results/scale-*.csv together.
# Rows (every tool of a row is run in turn, RUNS times, interleaved):
#   build     mkfs.ddfs -r | mkfs.erofs | mke2fs -t ext4 -d | mkfs.btrfs -r  (+ sync -f)
#   cp-r-in   ddfs cp -r SRC IMG:/ into a fresh image | host cp -r to a folder (+ sync -f)
#   ls-lR     ddfs ls -lR | host ls -lR of the source
#   du-s      ddfs du -s | host du -s
#   cp-a-out  ddfs cp -a IMG:/ OUT | cp -a | fsck.erofs --extract | btrfs restore | debugfs rdump
#   tar-out   ddfs tar-out | cat | tar -cf - | cat
#   rm-r      ddfs rm -r of the copied tree | rm -r of a host copy (+ sync -f)
#   fsck      fsck.ddfs | e2fsck -fn | btrfs check --readonly | fsck.erofs
#   df        ddfs df, dedupe-tool status | dumpe2fs -h | btrfs inspect-internal dump-super
# Each cell: median wall seconds, time per file (µs) or per GiB (s), the largest peak
# RSS of the runs (a memory bound must hold for every run), the median CPU seconds
# (user + sys of the command and its children: CPU well below wall is I/O wait).
# Every timed command starts after an untimed sync -f of the scratch filesystem.
# Nothing is estimated: a tool that is missing or fails leaves "-" and a note.
#
# Environment: BIN (default bin), RUNS (3), SLOW (a first run longer than this many
# seconds is not repeated; 20), TIMEOUT (per command, 3600), TMPDIR, GO (go), NICE
# (a prefix for every timed command, e.g. "nice -n 10"; empty by default).
# Output: bench/results/scale-$SCALE.txt (table and ratios), scale-$SCALE.csv, and the
# SVG curves of bench/plot.
# shellcheck disable=SC2016,SC2086,SC2317
set -euo pipefail
export LC_ALL=C PATH="$PATH:/usr/sbin:/sbin"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SCALE=${SCALE:-small}
case $SCALE in
small) FILE_POINTS=${FILE_POINTS-10000 100000} GIB_POINTS=${GIB_POINTS-1} ;;
medium) FILE_POINTS=${FILE_POINTS-10000 100000 1000000} GIB_POINTS=${GIB_POINTS-1 4} ;;
full) FILE_POINTS=${FILE_POINTS-10000 100000 1000000 4000000} GIB_POINTS=${GIB_POINTS-1 4 16} ;;
*) echo "scale: SCALE is small, medium or full" >&2 && exit 2 ;;
esac
BIN=${BIN:-bin} RUNS=${RUNS:-3} SLOW=${SLOW:-20} TIMEOUT=${TIMEOUT:-3600} GO=${GO:-go} NICE=${NICE:-}
[[ -d $BIN ]] || BIN=$ROOT/$BIN
BIN=$(cd "$BIN" && pwd)
for t in mkfs.ddfs ddfs fsck.ddfs dedupe-tool; do
	[[ -x $BIN/$t ]] || { echo "scale: $BIN/$t missing (make build)" >&2 && exit 1; }
done
NAME=${NAME:-$SCALE} ROWS=${ROWS:-}
OUT_TXT=$ROOT/bench/results/scale-$NAME.txt
OUT_CSV=$ROOT/bench/results/scale-$NAME.csv

LOAD=$(cat /proc/loadavg)
NOTES=()
note() { NOTES+=("$*") && echo "note: $*" >&2; }
APT=0
need() { # need COMMAND PACKAGE: installs PACKAGE with apt-get when COMMAND is missing
	command -v "$1" >/dev/null 2>&1 && return 0
	if [[ $APT -eq 0 ]] && command -v apt-get >/dev/null && [[ $(id -u) -eq 0 ]]; then
		APT=1
		apt-get update -qq >/dev/null 2>&1 || true
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >/dev/null 2>&1 || true
	command -v "$1" >/dev/null 2>&1 && return 0
	note "$2 not available: its columns are skipped" && return 1
}
need /usr/bin/time time || { echo "scale: GNU time is needed for peak RSS" >&2 && exit 1; }
EROFS=0 EXT4=0 BTRFS=0 PEERS=${PEERS:-erofs ext4 btrfs}
[[ " $PEERS " == *" erofs "* ]] && need mkfs.erofs erofs-utils && EROFS=1
[[ " $PEERS " == *" ext4 "* ]] && need mke2fs e2fsprogs && EXT4=1
[[ " $PEERS " == *" btrfs "* ]] && need mkfs.btrfs btrfs-progs && BTRFS=1

W=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-scale.XXXXXX")
trap 'rm -rf "$W"' EXIT
(cd "$ROOT" && "$GO" build -o "$W/gen" ./bench/gen)

echo "scale,kind,point,items,row,tool,seconds,per_item,peak_rss_kib,runs,cpu_s" >"$OUT_CSV"
TABLE=()

# one SETUP CMD: runs SETUP untimed, then CMD (a sh -c script) timed; sets T, R, OK.
one() {
	local t0 t1
	eval "$1" >/dev/null 2>&1 || true
	# Untimed: write back what is dirty (the data set just generated, the setup's
	# copies), or the next writer's own sync -f would pay for it.
	sync -f "$W"
	t0=$(date +%s.%N)
	OK=1
	timeout "$TIMEOUT" /usr/bin/time -f '%U %S %M' -o "$W/rss" $NICE sh -c "$2" >/dev/null 2>"$W/err" </dev/null || OK=0
	t1=$(date +%s.%N)
	T=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
	local last
	last=$(tail -n 1 "$W/rss" 2>/dev/null || echo -)
	R=$(awk '{ print $3 }' <<<"$last") C=$(awk '{ printf "%.2f", $1 + $2 }' <<<"$last")
	[[ $R =~ ^[0-9]+$ ]] || R=- C=-
}

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
largest() { printf '%s\n' "$@" | grep -v '^-$' | sort -g | tail -n 1; }

# row NAME then TOOLS=(label ...) SETUPS=(...) CMDS=(...): interleaved runs, one CSV line
# and one table line per tool; the ratio column is ddfs's time over each peer's.
row() {
	local name=$1 i r n=${#TOOLS[@]} runs=$RUNS line ddfs_t=""
	[[ -z $ROWS || $name == build || " $ROWS " == *" $name "* ]] || return 0
	declare -A ts rs cs fail
	for ((r = 0; r < runs; r++)); do
		for ((i = 0; i < n; i++)); do
			[[ -n ${fail[$i]:-} ]] && continue
			one "${SETUPS[$i]}" "${CMDS[$i]}"
			if [[ $OK -eq 0 ]]; then
				fail[$i]=1 && note "$KIND $POINT $name ${TOOLS[$i]}: $(head -c 200 "$W/err" | tr '\n' ' ')"
				continue
			fi
			ts[$i]+="$T " rs[$i]+="$R " cs[$i]+="$C "
			# A slow command is run once: the curves need every point more than a median.
			[[ $r -eq 0 ]] && awk -v t="$T" -v s="$SLOW" 'BEGIN { exit !(t > s) }' && runs=1
		done
	done
	line=$(printf '%-10s %-5s %-8s' "$KIND" "$POINT" "$name")
	for ((i = 0; i < n; i++)); do
		local tool=${TOOLS[$i]} med=- per=- rss=- cpu=- k
		if [[ -z ${fail[$i]:-} ]]; then
			med=$(median ${ts[$i]}) rss=$(largest ${rs[$i]})
			cpu=$(median $(tr ' ' '\n' <<<"${cs[$i]}" | grep -v '^-$' || true))
			[[ -n $cpu ]] || cpu=-
			[[ -n $rss ]] || rss=-
			if [[ $KIND == files ]]; then
				per=$(awk -v t="$med" -v n="$ITEMS" 'BEGIN { printf "%.2f", t / n * 1e6 }')
			else
				per=$(awk -v t="$med" -v n="$ITEMS" 'BEGIN { printf "%.3f", t / n }')
			fi
			[[ $i -eq 0 ]] && ddfs_t=$med
		fi
		echo "$SCALE,$KIND,$POINT,$ITEMS,$name,$tool,$med,$per,$rss,$(wc -w <<<"${ts[$i]:-}"),$cpu" >>"$OUT_CSV"
		k=$([[ $rss == - ]] && echo - || echo $((rss / 1024)))
		line+=$(printf ' | %s %ss %s%s %sMiB cpu %ss' "$tool" "$med" "$per" "$([[ $KIND == files ]] && echo µs/file || echo s/GiB)" "$k" "$cpu")
		if [[ $i -gt 0 && -n $ddfs_t && $med != - ]]; then
			line+=$(awk -v a="$ddfs_t" -v b="$med" 'BEGIN { printf " (ddfs/peer %.2f)", (b > 0) ? a / b : 0 }')
		fi
	done
	TABLE+=("$line") && echo "$line"
}

point() { # point KIND POINT ITEMS: every row on one data set in $W/src/t
	KIND=$1 POINT=$2 ITEMS=$3
	local s=$W/src/t img=$W/ddfs.img size
	size=$(($(du -sk --apparent-size "$s" | cut -f1) * 3 / 1024 + 1024))M
	local inodes=$((ITEMS * 2 + 10000))
	[[ $KIND == data ]] && inodes=10000
	TOOLS=(ddfs) SETUPS=("rm -f $img") CMDS=("$BIN/mkfs.ddfs -q -b $size -r $s $img && sync -f $img")
	if [[ $EROFS -eq 1 ]]; then TOOLS+=(mkfs.erofs) SETUPS+=("rm -f $W/erofs.img") CMDS+=("mkfs.erofs --quiet $W/erofs.img $s && sync -f $W/erofs.img"); fi
	if [[ $EXT4 -eq 1 ]]; then TOOLS+=("mke2fs -d") SETUPS+=("rm -f $W/ext4.img") CMDS+=("mke2fs -q -F -t ext4 -N $inodes -d $s $W/ext4.img $size && sync -f $W/ext4.img"); fi
	if [[ $BTRFS -eq 1 ]]; then TOOLS+=("mkfs.btrfs -r") SETUPS+=("rm -f $W/btrfs.img; truncate -s $size $W/btrfs.img") CMDS+=("mkfs.btrfs -q -f -r $s $W/btrfs.img && sync -f $W/btrfs.img"); fi
	row build
	TOOLS=(ddfs "host cp -r") SETUPS=("rm -f $W/in.img; $BIN/mkfs.ddfs -q -b $size $W/in.img" "rm -rf $W/hostcp")
	CMDS=("$BIN/ddfs cp -r $s $W/in.img:/ && sync -f $W/in.img" "cp -r $s $W/hostcp && sync -f $W/hostcp")
	row cp-r-in
	TOOLS=(ddfs "host ls -lR") SETUPS=(: :) CMDS=("$BIN/ddfs ls -lR $img:/ >/dev/null" "ls -lR $s >/dev/null")
	row ls-lR
	TOOLS=(ddfs "host du -s") SETUPS=(: :) CMDS=("$BIN/ddfs du -s $img:/" "du -s $s")
	row du-s
	TOOLS=(ddfs "host cp -a") SETUPS=("rm -rf $W/out" "rm -rf $W/out") CMDS=("$BIN/ddfs cp -a $img:/ $W/out" "cp -a $s $W/out")
	if [[ $EROFS -eq 1 ]] && command -v fsck.erofs >/dev/null; then TOOLS+=("fsck.erofs --extract") SETUPS+=("rm -rf $W/out") CMDS+=("fsck.erofs --extract=$W/out $W/erofs.img"); fi
	if [[ $BTRFS -eq 1 ]]; then TOOLS+=("btrfs restore") SETUPS+=("rm -rf $W/out; mkdir $W/out") CMDS+=("btrfs restore $W/btrfs.img $W/out"); fi
	if [[ $EXT4 -eq 1 ]]; then TOOLS+=("debugfs rdump") SETUPS+=("rm -rf $W/out; mkdir $W/out") CMDS+=("debugfs -R 'rdump / $W/out' $W/ext4.img"); fi
	row cp-a-out
	rm -rf "$W/out"
	TOOLS=(ddfs "host tar -c") SETUPS=(: :) CMDS=("$BIN/ddfs tar-out $img | cat >/dev/null" "tar -cf - -C $s . | cat >/dev/null")
	row tar-out
	TOOLS=(ddfs "host rm -r") SETUPS=("cp --sparse=always $W/in.img $W/rm.img" "rm -rf $W/hostrm; cp -a $s $W/hostrm")
	CMDS=("$BIN/ddfs rm -r $W/rm.img:/t && sync -f $W/rm.img" "rm -r $W/hostrm && sync -f $W")
	row rm-r
	rm -rf "$W/rm.img" "$W/hostrm" "$W/hostcp" "$W/in.img"
	TOOLS=(ddfs) SETUPS=(:) CMDS=("$BIN/fsck.ddfs $img")
	if [[ $EXT4 -eq 1 ]]; then TOOLS+=("e2fsck -fn") SETUPS+=(:) CMDS+=("e2fsck -fn $W/ext4.img"); fi
	if [[ $BTRFS -eq 1 ]]; then TOOLS+=("btrfs check") SETUPS+=(:) CMDS+=("btrfs check --readonly $W/btrfs.img"); fi
	if [[ $EROFS -eq 1 ]] && command -v fsck.erofs >/dev/null; then TOOLS+=(fsck.erofs) SETUPS+=(:) CMDS+=("fsck.erofs $W/erofs.img"); fi
	row fsck
	TOOLS=(ddfs "dedupe-tool status") SETUPS=(: :) CMDS=("$BIN/ddfs df $img" "$BIN/dedupe-tool status $img")
	if [[ $EXT4 -eq 1 ]]; then TOOLS+=("dumpe2fs -h") SETUPS+=(:) CMDS+=("dumpe2fs -h $W/ext4.img"); fi
	if [[ $BTRFS -eq 1 ]]; then TOOLS+=("btrfs dump-super") SETUPS+=(:) CMDS+=("btrfs inspect-internal dump-super $W/btrfs.img"); fi
	row df
	rm -f "$W"/*.img
}

# fits GIB: is there room for about FIT_COPIES (6) copies of a point? (fewer
# will do when ROWS and PEERS leave out the rows and tools that make copies)
fits() {
	local free
	free=$(df -k --output=avail "$W" | tail -n 1)
	[[ $((free / 1024 / 1024)) -ge $(($1 * ${FIT_COPIES:-6} + 2)) ]]
}

for n in $FILE_POINTS; do
	dirs=$(((n + 999) / 1000))
	fits $((n * 4 / 1000000 + 1)) || { note "$n files: not enough free space, skipped" && continue; }
	rm -rf "$W/src" && mkdir -p "$W/src"
	"$W/gen" small -dirs "$dirs" -files $((n / dirs)) -max 8192 -nest 100 "$W/src/t"
	label=$(awk -v n="$n" 'BEGIN { if (n >= 1e6) printf "%gM", n / 1e6; else printf "%gk", n / 1e3 }')
	point files "$label" "$n"
done
for g in $GIB_POINTS; do
	fits "$g" || { note "$g GiB: not enough free space, skipped" && continue; }
	rm -rf "$W/src" && mkdir -p "$W/src"
	"$W/gen" big -n $((g * 4)) -size 256M "$W/src/t"
	point data "${g}G" "$g"
done
rm -rf "$W/src"

{
	echo "# bench/scale.sh SCALE=$SCALE NAME=$NAME FILE_POINTS=\"$FILE_POINTS\" GIB_POINTS=\"$GIB_POINTS\" ROWS=\"${ROWS:-all}\" PEERS=\"$PEERS\", $(date -u +%Y-%m-%d), $(nproc) cores, RUNS=$RUNS (a first run over ${SLOW}s is not repeated); loadavg at start: $LOAD"
	echo "# per row and tool: median seconds, time per file (µs) or per GiB (s), largest peak RSS of the runs, median CPU seconds (user+sys); each timed command starts after an untimed sync -f"
	printf '%s\n' "${TABLE[@]}"
	for n in "${NOTES[@]}"; do echo "note: $n"; done
} >"$OUT_TXT"
(cd "$ROOT" && "$GO" run ./bench/plot -o bench/results bench/results/scale-*.csv) || note "plot failed"
echo "wrote $OUT_TXT and $OUT_CSV"
