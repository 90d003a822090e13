#!/usr/bin/env bash
# bench/run.sh — ddfs tools against their peers (btrfs-progs, e2fsprogs, erofs-utils,
# coreutils, tar).
#
# Cases (median of RUNS runs each; ddfs and the peer are measured in the same run):
#   group "mkfs":
#   a. mkfs of 4 sparse 1 TiB image files, data raid10, metadata raid1c3
#      (plus one row per --csum algorithm)
#   b. mkfs of one 8 GiB image file
#   c. offline check of the fresh images from a. and b.
#   group "build": building an image from a directory, for D1 (a copy of /usr/local/go)
#      and 4 x 256 MiB of seeded random bytes: mkfs.ddfs -r, and mkfs.ddfs + ddfs cp -r,
#      against mkfs.btrfs -r, mke2fs -t ext4 -d, mkfs.erofs and cp -a to a folder.
#      Every writer, ddfs included, ends with `sync -f` on its output.
#   group "copyout": D1 out of a ddfs image (ddfs cp -a, ddfs tar-out | cat) against
#      cp -a of the host tree and tar -cf - | cat (the read limit). No sync (cp doesn't).
#   group "small": 100,000 small files (100 dirs x 1000 files, 0-4 KiB): files/s of
#      mkfs.ddfs -r against mkfs.btrfs -r, mke2fs -d and mkfs.erofs.
#   group "randwrite": random 4 KiB overwrites of a 1 GiB file through the Go API
#      (bench/randwrite), committing every 1,000 and 10,000 writes; the peer is the same
#      pattern on a host file with pwrite + fdatasync.
#   group "mem": peak RSS of ddfs cp of one 8 GiB file (half random, half written
#      zeros; 2 GiB with less than 20 GiB free) into and out of an image.
#
# Environment:
#   BIN      directory with mkfs.ddfs, ddfs, fsck.ddfs   (default: bin)
#   RUNS     runs per measurement, the median is reported (default: 3)
#   SLOW     a command whose first run takes longer than this many seconds is run
#            only once (default: 10)
#   TMPDIR   where the scratch directory is made          (default: /tmp)
#   TIMEOUT  seconds after which one command is killed    (default: 30; the data
#            groups use LONG_TIMEOUT, default 600)
#   CASES    groups to run (default: "mkfs build copyout small randwrite mem")
#   D1       tree copied to make D1 (default: /usr/local/go, else `go env GOROOT`)
#   GO       go command that builds bench/gen and bench/randwrite (default: go)
#   MEM_SIZE file size of the "mem" group in GiB (default: 8, or 2 with < 20 GiB free)
#
# Output: the tables on stdout, also written to bench/results/latest.txt.
# Exit status: 0, or 1 if a ddfs tool failed (a peer failing is only noted).

# The cleanup trap and the setup_* functions are called indirectly (trap, measure).
# The sh -c scripts take their operands as "$1"..., so single quotes are meant (SC2016).
# RT, RR, RN, RA are read through a nameref in get (SC2034).
# shellcheck disable=SC2317,SC2016,SC2034
set -euo pipefail

export LC_ALL=C
export PATH="$PATH:/usr/sbin:/sbin"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${BIN:-bin}
RUNS=${RUNS:-3}
SLOW=${SLOW:-10}
TIMEOUT=${TIMEOUT:-30}
LONG_TIMEOUT=${LONG_TIMEOUT:-600}
CASES=${CASES:-mkfs build copyout small randwrite mem}
GO=${GO:-go}
RESULTS_DIR="$HERE/results"
RESULTS="$RESULTS_DIR/latest.txt"

# ---------------------------------------------------------------- helpers

NOTES=()
note() {
	NOTES+=("$*")
	echo "note: $*" >&2
}

die() {
	echo "bench: $*" >&2
	exit 1
}

# Resolve BIN: as given (relative to the current directory), else relative to the repo root.
if [[ -d "$BIN" ]]; then
	BIN=$(cd "$BIN" && pwd)
elif [[ -d "$ROOT/$BIN" ]]; then
	BIN=$(cd "$ROOT/$BIN" && pwd)
else
	die "no binary directory '$BIN' (build first: make build, or set BIN)"
fi
for t in mkfs.ddfs ddfs fsck.ddfs; do
	[[ -x "$BIN/$t" ]] || die "$BIN/$t missing or not executable (build first)"
done

has_case() { [[ " $CASES " == *" $1 "* ]]; }

APT_UPDATED=0
apt_install() {
	command -v apt-get >/dev/null 2>&1 || return 1
	[[ $(id -u) -eq 0 ]] || return 1
	if [[ $APT_UPDATED -eq 0 ]]; then
		APT_UPDATED=1
		apt-get update -qq >/dev/null 2>&1 || true
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" \
		>/dev/null 2>&1
}

# need_tool PATH_OR_COMMAND PACKAGE: 0 if usable (installing it if needed).
need_tool() {
	local cmd=$1 pkg=$2
	if command -v "$cmd" >/dev/null 2>&1; then
		return 0
	fi
	echo "bench: installing $pkg ..." >&2
	if apt_install "$pkg" && command -v "$cmd" >/dev/null 2>&1; then
		return 0
	fi
	note "$pkg not available (apt-get install failed: no network or not root?)"
	return 1
}

HAVE_BTRFS=0
HAVE_EXT4=0
HAVE_TIME=0
if need_tool mkfs.btrfs btrfs-progs && command -v btrfs >/dev/null 2>&1; then
	HAVE_BTRFS=1
else
	note "btrfs peer skipped"
fi
if need_tool mke2fs e2fsprogs && command -v e2fsck >/dev/null 2>&1; then
	HAVE_EXT4=1
else
	note "ext4 peer skipped"
fi
if need_tool /usr/bin/time time; then HAVE_TIME=1; else note "no GNU time: peak RSS not measured"; fi
HAVE_EROFS=0
if has_case build || has_case small; then
	if need_tool mkfs.erofs erofs-utils; then HAVE_EROFS=1; else note "erofs peer skipped"; fi
fi
HAVE_TIMEOUT=0
if command -v timeout >/dev/null 2>&1; then HAVE_TIMEOUT=1; fi

W=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-bench.XXXXXX")
LOOPS=()
cleanup() {
	local l
	for l in "${LOOPS[@]}"; do
		losetup -d "$l" >/dev/null 2>&1 || true
	done
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now() { date +%s.%N; }

# median NUMBERS...: the median (mean of the middle two for an even count); "-" if any is "-".
median() {
	local x
	for x in "$@"; do [[ $x == "-" ]] && { echo "-"; return; }; done
	printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 }
		END { if (NR == 0) print "-"; else if (NR % 2) print a[(NR + 1) / 2];
		      else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# largest NUMBERS...: the maximum; "-" if any is "-". Peak RSS is reported as the
# largest of the runs: a memory target must hold for every run, not the typical one.
largest() {
	local x
	for x in "$@"; do [[ $x == "-" ]] && { echo "-"; return; }; done
	printf '%s\n' "$@" | sort -g | tail -n 1
}

# run_once CMD...: runs CMD once; sets T (wall seconds), R (peak RSS KiB or "-"), RC, ERR.
run_once() {
	local t0 t1 wrap=()
	[[ $HAVE_TIMEOUT -eq 1 ]] && wrap=(timeout "$TIMEOUT")
	[[ $HAVE_TIME -eq 1 ]] && wrap+=(/usr/bin/time -f '%M' -o "$W/rss")
	rm -f "$W/rss"
	RC=0
	t0=$(now)
	"${wrap[@]}" "$@" >"$W/out" 2>"$W/err" </dev/null || RC=$?
	t1=$(now)
	T=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')
	R="-"
	if [[ $HAVE_TIME -eq 1 && -s "$W/rss" ]]; then
		R=$(tail -n 1 "$W/rss")
		[[ $R =~ ^[0-9]+$ ]] || R="-"
	fi
	ERR=""
	if [[ $RC -ne 0 ]]; then
		[[ $RC -eq 124 ]] && ERR="timed out after ${TIMEOUT}s; "
		ERR+="exit $RC: $(cat "$W/err" "$W/out" | grep -v '^Command exited' | head -n 3 | tr '\n' ' ')"
	fi
}

# measure SETUP CMD...: runs SETUP (untimed) then CMD, RUNS times (once if the first
# run takes longer than SLOW seconds).
# Sets MT (median seconds or FAIL), MR (largest peak RSS KiB of the runs or "-"), MN (runs), MERR.
measure() {
	local setup=$1 i ts=() rs=()
	shift
	MERR="" MN=0 MTS=""
	for ((i = 0; i < RUNS; i++)); do
		if ! "$setup"; then
			MT=FAIL MR="-" MERR="setup $setup failed"
			return 1
		fi
		run_once "$@"
		if [[ $RC -ne 0 ]]; then
			MT=FAIL MR="-" MERR="$ERR"
			return 1
		fi
		ts+=("$T")
		rs+=("$R")
		MN=$((MN + 1))
		if awk -v t="$T" -v s="$SLOW" 'BEGIN { exit !(t > s) }'; then
			break
		fi
	done
	MT=$(median "${ts[@]}")
	MR=$(largest "${rs[@]}")
	MTS="${ts[*]}"
}

# alloc_kib FILES...: allocated KiB (st_blocks), summed.
alloc_kib() {
	local f sum=0 b
	for f in "$@"; do
		[[ -e $f ]] || { echo "-"; return; }
		b=$(stat -c %b "$f")
		sum=$((sum + b * $(stat -c %B "$f") / 1024))
	done
	echo "$sum"
}

# alloc_each FILES...: "name=bytes" of allocated bytes for each file.
alloc_each() {
	local f out=()
	for f in "$@"; do
		if [[ -e $f ]]; then
			out+=("$(basename "$f")=$(($(stat -c %b "$f") * $(stat -c %B "$f")))")
		else
			out+=("$(basename "$f")=-")
		fi
	done
	echo "${out[*]}"
}

fmt_s() {
	if [[ $1 == FAIL || $1 == "-" ]]; then
		echo "$1"
	else
		awk -v t="$1" 'BEGIN { printf "%.3f", t }'
	fi
}
fmt_mib() {
	if [[ $1 == "-" ]]; then
		echo "-"
	else
		awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'
	fi
}
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a !~ /^[0-9.eE+-]+$/ || b !~ /^[0-9.eE+-]+$/ || b + 0 <= 0) print "-";
		else printf "%.2f", a / b }'
}

ROWS=()
DDFS_FAILED=0
# row CASE DDFS_T DDFS_R DDFS_ALLOC PEER PEER_T PEER_R PEER_ALLOC
row() {
	ROWS+=("$(printf '| %-24s | %8s | %-24s | %8s | %6s | %8s | %8s | %10s | %10s |' \
		"$1" "$(fmt_s "$2")" "$5" "$(fmt_s "$6")" "$(ratio "$2" "$6")" \
		"$(fmt_mib "$3")" "$(fmt_mib "$7")" "$4" "$8")")
	echo "bench: $1 vs $5: done" >&2
}

ddfs_failed() {
	DDFS_FAILED=1
	note "$1: $MERR"
}

# ---------------------------------------------------------------- setups

A4D="$W/a4/ddfs"
A4B="$W/a4/btrfs"
CS="$W/csum"
ONE="$W/one"
mkdir -p "$A4D" "$A4B" "$CS" "$ONE"
A4D_FILES=("$A4D/a.img" "$A4D/b.img" "$A4D/c.img" "$A4D/d.img")
A4B_FILES=("$A4B/a.img" "$A4B/b.img" "$A4B/c.img" "$A4B/d.img")
CS_FILES=("$CS/a.img" "$CS/b.img" "$CS/c.img" "$CS/d.img")

setup_a4_ddfs() { rm -f "${A4D_FILES[@]}"; }
setup_a4_btrfs() {
	local f
	rm -f "${A4B_FILES[@]}"
	for f in "${A4B_FILES[@]}"; do truncate -s 1T "$f" || return 1; done
}
setup_csum_ddfs() { rm -f "${CS_FILES[@]}"; }
setup_csum_btrfs() {
	local f
	rm -f "${CS_FILES[@]}"
	for f in "${CS_FILES[@]}"; do truncate -s 1T "$f" || return 1; done
}
setup_one_ddfs() { rm -f "$ONE/ddfs.img"; }
setup_one_btrfs() { rm -f "$ONE/btrfs.img" && truncate -s 8G "$ONE/btrfs.img"; }
setup_one_ext4() { rm -f "$ONE/ext4.img" && truncate -s 8G "$ONE/ext4.img"; }
setup_none() { :; }

echo "bench: ddfs tools from $BIN, $RUNS runs each, scratch in $W" >&2

# The groups of cases; each is a function, run if named in CASES.

A_OK=0 A_DT="-" A_DEACH="-" A_BEACH="-"
case_mkfs() {
	# ---------------------------------------------------------------- a. mkfs 4 x 1 TiB

	A_OK=0
	if measure setup_a4_ddfs "$BIN/mkfs.ddfs" -q -f -b 1T -d raid10 -m raid1c3 "${A4D_FILES[@]}"; then
		A_OK=1
	else
		ddfs_failed "mkfs.ddfs 4x1T"
	fi
	A_DT=$MT A_DR=$MR
	A_DALLOC=$(alloc_kib "${A4D_FILES[@]}")
	A_DEACH=$(alloc_each "${A4D_FILES[@]}")

	A_BT="-" A_BR="-" A_BALLOC="-" A_BEACH="-"
	if [[ $HAVE_BTRFS -eq 1 ]]; then
		if ! measure setup_a4_btrfs mkfs.btrfs -q -f -d raid10 -m raid1c3 "${A4B_FILES[@]}"; then
			note "mkfs.btrfs 4x1T: $MERR"
		fi
		A_BT=$MT A_BR=$MR
		A_BALLOC=$(alloc_kib "${A4B_FILES[@]}")
		A_BEACH=$(alloc_each "${A4B_FILES[@]}")
	fi
	row "mkfs 4x1T raid10/raid1c3" "$A_DT" "$A_DR" "$A_DALLOC" "mkfs.btrfs" "$A_BT" "$A_BR" "$A_BALLOC"

	# The same with each checksum algorithm; btrfs with its nearest equivalent.
	for c in crc32c xxhash64 sha256 blake3; do
		case $c in
		xxhash64) bc=xxhash ;;
		blake3) bc=blake2 ;; # btrfs has no blake3: blake2b is its nearest
		*) bc=$c ;;
		esac
		if ! measure setup_csum_ddfs "$BIN/mkfs.ddfs" -q -f -b 1T -d raid10 -m raid1c3 --csum "$c" "${CS_FILES[@]}"; then
			ddfs_failed "mkfs.ddfs --csum $c"
		fi
		dt=$MT dr=$MR dal=$(alloc_kib "${CS_FILES[@]}")
		bt="-" br="-" bal="-"
		if [[ $HAVE_BTRFS -eq 1 ]]; then
			if ! measure setup_csum_btrfs mkfs.btrfs -q -f -d raid10 -m raid1c3 --csum "$bc" "${CS_FILES[@]}"; then
				note "mkfs.btrfs --csum $bc: $MERR"
			fi
			bt=$MT br=$MR bal=$(alloc_kib "${CS_FILES[@]}")
		fi
		row "  --csum $c" "$dt" "$dr" "$dal" "mkfs.btrfs --csum $bc" "$bt" "$br" "$bal"
	done
	rm -f "${CS_FILES[@]}"

	# ---------------------------------------------------------------- b. mkfs 1 x 8 GiB

	if ! measure setup_one_ddfs "$BIN/mkfs.ddfs" -q -f -b 8G "$ONE/ddfs.img"; then
		ddfs_failed "mkfs.ddfs 8G"
	fi
	B_DT=$MT B_DR=$MR B_DALLOC=$(alloc_kib "$ONE/ddfs.img")
	B_OK=0
	[[ $B_DT != FAIL ]] && B_OK=1

	bt="-" br="-" bal="-"
	if [[ $HAVE_BTRFS -eq 1 ]]; then
		measure setup_one_btrfs mkfs.btrfs -q -f "$ONE/btrfs.img" || note "mkfs.btrfs 8G: $MERR"
		bt=$MT br=$MR bal=$(alloc_kib "$ONE/btrfs.img")
	fi
	row "mkfs 1x8G" "$B_DT" "$B_DR" "$B_DALLOC" "mkfs.btrfs" "$bt" "$br" "$bal"
	BTRFS_ONE_OK=0
	[[ $bt != FAIL && $bt != "-" ]] && BTRFS_ONE_OK=1

	et="-" er="-" eal="-"
	if [[ $HAVE_EXT4 -eq 1 ]]; then
		measure setup_one_ext4 mke2fs -q -F -t ext4 "$ONE/ext4.img" || note "mke2fs 8G: $MERR"
		et=$MT er=$MR eal=$(alloc_kib "$ONE/ext4.img")
	fi
	row "mkfs 1x8G" "$B_DT" "$B_DR" "$B_DALLOC" "mke2fs -t ext4" "$et" "$er" "$eal"
	EXT4_OK=0
	[[ $et != FAIL && $et != "-" ]] && EXT4_OK=1

	# ---------------------------------------------------------------- c. offline check

	# 4 x 1 TiB: btrfs check finds the other devices only among block devices, so the
	# btrfs images are attached to loop devices (untimed); without loop devices: skipped.
	dt="-" dr="-"
	if [[ $A_OK -eq 1 ]]; then
		if measure setup_none "$BIN/fsck.ddfs" "${A4D_FILES[0]}"; then
			dt=$MT dr=$MR
		else
			ddfs_failed "fsck.ddfs 4x1T"
			dt=FAIL
		fi
	fi
	bt="-" br="-"
	if [[ $HAVE_BTRFS -eq 1 && $A_BT != FAIL && $A_BT != "-" ]]; then
		loop_ok=1
		for f in "${A4B_FILES[@]}"; do
			if l=$(losetup -f --show "$f" 2>/dev/null) && [[ -n $l ]]; then
				LOOPS+=("$l")
			else
				loop_ok=0
				break
			fi
		done
		if [[ $loop_ok -eq 1 ]]; then
			measure setup_none btrfs check --readonly "${LOOPS[0]}" || note "btrfs check 4x1T: $MERR"
			bt=$MT br=$MR
		else
			note "no loop devices: btrfs check of the 4-device set skipped (it cannot find image files)"
		fi
		for l in "${LOOPS[@]}"; do losetup -d "$l" >/dev/null 2>&1 || true; done
		LOOPS=()
	fi
	row "check 4x1T" "$dt" "$dr" "-" "btrfs check --readonly" "$bt" "$br" "-"

	dt="-" dr="-"
	if [[ $B_OK -eq 1 ]]; then
		if measure setup_none "$BIN/fsck.ddfs" "$ONE/ddfs.img"; then
			dt=$MT dr=$MR
		else
			ddfs_failed "fsck.ddfs 8G"
			dt=FAIL
		fi
	fi
	bt="-" br="-"
	if [[ $BTRFS_ONE_OK -eq 1 ]]; then
		measure setup_none btrfs check --readonly "$ONE/btrfs.img" || note "btrfs check 8G: $MERR"
		bt=$MT br=$MR
	fi
	row "check 1x8G" "$dt" "$dr" "-" "btrfs check --readonly" "$bt" "$br" "-"
	et="-" er="-"
	if [[ $EXT4_OK -eq 1 ]]; then
		measure setup_none e2fsck -fn "$ONE/ext4.img" || note "e2fsck 8G: $MERR"
		et=$MT er=$MR
	fi
	row "check 1x8G" "$dt" "$dr" "-" "e2fsck -fn" "$et" "$er" "-"
}

# ---------------------------------------------------------------- data groups: helpers

# Results of the data groups, by key "group/data/tool": seconds, RSS KiB, runs, alloc KiB.
declare -A RT=() RR=() RN=() RA=()
keep() {
	RT[$1]=$MT RR[$1]=$MR RN[$1]=${MN:-0} RA[$1]=${2:--}
	echo "bench: $1: runs ${MTS:--} s, median $MT s" >&2
}
skip_key() { RT[$1]="-" RR[$1]="-" RN[$1]=0 RA[$1]="-"; }
get() { # get ARRAY KEY: the value or "-"
	local -n a=$1
	echo "${a[$2]:--}"
}

# discard PATH...: removes files; moves directories into $W/trash, removed at exit.
# Deleting a tree of thousands of files and creating another at once is slow on ext4
# without a journal (the inode allocator skips inodes deleted in the last minutes, see
# recently_deleted() in fs/ext4/ialloc.c): a deleted output would slow down the next run.
TRASH_N=0
discard() {
	local p
	mkdir -p "$W/trash"
	for p in "$@"; do
		if [[ -d $p && ! -L $p ]]; then
			TRASH_N=$((TRASH_N + 1))
			mv "$p" "$W/trash/$TRASH_N" || return 1
		else
			rm -f "$p" || return 1
		fi
	done
}

# setup_paths: the untimed setup of the data groups. Discards S_RM, makes S_TRUNC a sparse
# file of S_SIZE, runs S_PRE (a command, or nothing), then flushes the scratch filesystem
# so that no earlier dirty data is written back during the timed run.
S_RM=() S_TRUNC="" S_SIZE="" S_PRE=()
setup_paths() {
	discard "${S_RM[@]}" || return 1
	if [[ -n $S_TRUNC ]]; then truncate -s "$S_SIZE" "$S_TRUNC" || return 1; fi
	if [[ ${#S_PRE[@]} -gt 0 ]]; then "${S_PRE[@]}" >/dev/null 2>&1 || return 1; fi
	sync -f "$W"
}
setup_with() { # setup_with RM TRUNC SIZE [PRE...]
	S_RM=("$1") S_TRUNC=$2 S_SIZE=$3
	shift 3
	S_PRE=("$@")
}

# Wrappers that end a writer with sync -f on its output (run through sh -c, timed as one).
SH_MKFS_DDFS_R='"$1" -q -f -b "$2" -r "$3" "$4" && sync -f "$4"'
SH_MKFS_DDFS_CP='"$1" -q -f -b "$2" "$5" && "$3" cp -q -r "$4" "$5:/" && sync -f "$5"'
SH_BTRFS_R='mkfs.btrfs -q -f -r "$1" "$2" && sync -f "$2"'
SH_EXT4_D='mke2fs -q -F -t ext4 -d "$1" "$2" && sync -f "$2"'
SH_EROFS='mkfs.erofs --quiet "$2" "$1" && sync -f "$2"'
SH_CP_A='cp -a "$1" "$2" && sync -f "$2"'

# check_ddfs IMG WHAT: fsck.ddfs on an image a ddfs tool made (untimed); a note if not clean.
check_ddfs() {
	local rc=0
	"$BIN/fsck.ddfs" "$1" >"$W/fsck.out" 2>&1 || rc=$?
	if [[ $rc -ne 0 ]]; then
		note "fsck.ddfs after $2: exit $rc: $(grep -v '^$' "$W/fsck.out" | tail -n 1 | cut -c 1-160)"
	fi
}

dir_kib() { du -sk "$1" 2>/dev/null | awk '{ print $1 }'; }
fmt_kib_mib() { if [[ $1 == "-" ]]; then echo "-"; else awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; fi; }
fmt_runs() { if [[ $1 == 0 ]]; then echo "-"; else echo "$1"; fi; }
# per_s COUNT SECONDS: COUNT / SECONDS, or "-"
per_s() {
	awk -v n="$1" -v t="$2" 'BEGIN { if (t !~ /^[0-9.eE+-]+$/ || t + 0 <= 0) print "-"; else printf "%.0f", n / t }'
}
under() { # under VALUE_KIB LIMIT_MIB: PASS/FAIL/-
	if [[ $1 == "-" ]]; then echo "-"; else awk -v k="$1" -v l="$2" 'BEGIN { print (k / 1024 < l) ? "PASS" : "FAIL" }'; fi
}

GEN="$W/tools/gen"
RANDWRITE="$W/tools/randwrite"
HAVE_GO=0
build_helpers() {
	if ! command -v "$GO" >/dev/null 2>&1; then
		note "no go command: bench/gen and bench/randwrite not built; the groups that need them are skipped"
		return
	fi
	mkdir -p "$W/tools"
	if (cd "$ROOT" && "$GO" build -o "$GEN" ./bench/gen && "$GO" build -o "$RANDWRITE" ./bench/randwrite) >"$W/gobuild" 2>&1; then
		HAVE_GO=1
	else
		note "go build of bench/gen, bench/randwrite failed: $(head -n 2 "$W/gobuild" | tr '\n' ' ')"
	fi
}

DATA="$W/data"
D1DIR="$DATA/go" # named go, so that ddfs cp -r puts it at IMG:/go
D1_FILES=0 D1_BYTES=0 D1_DESC=""
make_d1() {
	local src=${D1:-/usr/local/go}
	if [[ ! -d $src ]] && command -v "$GO" >/dev/null 2>&1; then src=$("$GO" env GOROOT); fi
	[[ -d $src ]] || { note "no D1 source tree ($src)"; return 1; }
	mkdir -p "$DATA"
	cp -a "$src" "$D1DIR" || return 1
	D1_FILES=$(find "$D1DIR" -type f | wc -l)
	D1_BYTES=$(du -sb "$D1DIR" | awk '{ print $1 }')
	D1_DESC="copy of $src: $D1_FILES files, $(find "$D1DIR" -type d | wc -l) dirs, $(awk -v b="$D1_BYTES" 'BEGIN { printf "%.1f MB", b / 1e6 }')"
}

# ---------------------------------------------------------------- build: image from a directory

BUILD_ROWS=()
BUILD_TOOLS=("mkfs.ddfs -r" "mkfs.ddfs + ddfs cp -r" "mkfs.btrfs -r" "mke2fs -t ext4 -d" "mkfs.erofs" "cp -a + sync -f")
# build_set NAME SRC IMGSIZE [KEEP]: measures the ways of building an image of SRC.
# With KEEP, the mkfs.ddfs + ddfs cp -r image stays (the copyout group reads it).
build_set() {
	local name=$1 src=$2 size=$3 keepimg=${4:-} d="$W/build/$1"
	mkdir -p "$d"
	local k="build/$name"

	# One untimed run first: the first large write after a pause is slower on the
	# virtual disk (see README), and would otherwise count against the first tool only.
	"$BIN/mkfs.ddfs" -q -f -b "$size" -r "$src" "$d/warmup.img" >/dev/null 2>&1 || true
	rm -f "$d/warmup.img"

	setup_with "$d/ddfs-r.img" "" ""
	if TIMEOUT=$LONG_TIMEOUT measure setup_paths sh -c "$SH_MKFS_DDFS_R" sh "$BIN/mkfs.ddfs" "$size" "$src" "$d/ddfs-r.img"; then
		check_ddfs "$d/ddfs-r.img" "mkfs.ddfs -r ($name)"
	else
		ddfs_failed "mkfs.ddfs -r ($name)"
	fi
	keep "$k/mkfs.ddfs -r" "$(alloc_kib "$d/ddfs-r.img")"
	rm -f "$d/ddfs-r.img"

	setup_with "$d/ddfs-cp.img" "" ""
	if TIMEOUT=$LONG_TIMEOUT measure setup_paths sh -c "$SH_MKFS_DDFS_CP" sh "$BIN/mkfs.ddfs" "$size" "$BIN/ddfs" "$src" "$d/ddfs-cp.img"; then
		check_ddfs "$d/ddfs-cp.img" "mkfs.ddfs + ddfs cp -r ($name)"
	else
		ddfs_failed "mkfs.ddfs + ddfs cp -r ($name)"
	fi
	keep "$k/mkfs.ddfs + ddfs cp -r" "$(alloc_kib "$d/ddfs-cp.img")"
	[[ -n $keepimg ]] || rm -f "$d/ddfs-cp.img"

	if [[ $HAVE_BTRFS -eq 1 ]]; then
		setup_with "$d/btrfs.img" "$d/btrfs.img" "$size"
		TIMEOUT=$LONG_TIMEOUT measure setup_paths sh -c "$SH_BTRFS_R" sh "$src" "$d/btrfs.img" ||
			note "mkfs.btrfs -r ($name): $MERR"
		keep "$k/mkfs.btrfs -r" "$(alloc_kib "$d/btrfs.img")"
		rm -f "$d/btrfs.img"
	else
		skip_key "$k/mkfs.btrfs -r"
	fi

	if [[ $HAVE_EXT4 -eq 1 ]]; then
		setup_with "$d/ext4.img" "$d/ext4.img" "$size"
		TIMEOUT=$LONG_TIMEOUT measure setup_paths sh -c "$SH_EXT4_D" sh "$src" "$d/ext4.img" ||
			note "mke2fs -d ($name): $MERR"
		keep "$k/mke2fs -t ext4 -d" "$(alloc_kib "$d/ext4.img")"
		rm -f "$d/ext4.img"
	else
		skip_key "$k/mke2fs -t ext4 -d"
	fi

	if [[ $HAVE_EROFS -eq 1 ]]; then
		setup_with "$d/erofs.img" "" ""
		TIMEOUT=$LONG_TIMEOUT measure setup_paths sh -c "$SH_EROFS" sh "$src" "$d/erofs.img" ||
			note "mkfs.erofs ($name): $MERR"
		keep "$k/mkfs.erofs" "$(alloc_kib "$d/erofs.img")"
		rm -f "$d/erofs.img"
	else
		skip_key "$k/mkfs.erofs"
	fi

	setup_with "$d/cp" "" ""
	TIMEOUT=$LONG_TIMEOUT measure setup_paths sh -c "$SH_CP_A" sh "$src" "$d/cp" ||
		note "cp -a ($name): $MERR"
	keep "$k/cp -a + sync -f" "$(dir_kib "$d/cp")"
	discard "$d/cp"

	local t r dr dc
	dr=$(get RT "$k/mkfs.ddfs -r")
	dc=$(get RT "$k/mkfs.ddfs + ddfs cp -r")
	for t in "${BUILD_TOOLS[@]}"; do
		r="$k/$t"
		BUILD_ROWS+=("$(printf '| %-5s | %-22s | %4s | %8s | %8s | %9s | %9s | %9s |' \
			"$name" "$t" "$(fmt_runs "$(get RN "$r")")" "$(fmt_s "$(get RT "$r")")" \
			"$(fmt_mib "$(get RR "$r")")" "$(fmt_kib_mib "$(get RA "$r")")" \
			"$(ratio "$dr" "$(get RT "$r")")" "$(ratio "$dc" "$(get RT "$r")")")")
	done
	echo "bench: build $name: done" >&2
}

BIG_DESC=""
case_build() {
	[[ -d $D1DIR ]] && build_set D1 "$D1DIR" 4G keep
	if [[ $HAVE_GO -eq 1 ]]; then
		echo "bench: generating 4 x 256 MiB of seeded random bytes ..." >&2
		if "$GEN" big -seed 1 -n 4 -size 256M "$DATA/big" >"$W/gen.out" 2>&1; then
			BIG_DESC="4 files x 256 MiB of seeded random bytes (bench/gen big -seed 1)"
			build_set big "$DATA/big" 4G
		else
			note "gen big failed: $(head -n 2 "$W/gen.out" | tr '\n' ' ')"
		fi
		discard "$DATA/big"
	fi
}

# ---------------------------------------------------------------- copyout: D1 out of an image

COPYOUT_ROWS=()
case_copyout() {
	local img="$W/build/D1/ddfs-cp.img" o="$W/copyout" k=copyout
	mkdir -p "$o"
	if [[ ! -f $img ]]; then
		# The build group did not run (or failed): make the image here, untimed.
		mkdir -p "$W/build/D1"
		if ! { "$BIN/mkfs.ddfs" -q -f -b 4G "$img" && "$BIN/ddfs" cp -q -r "$D1DIR" "$img:/"; }; then
			note "copyout: could not make the D1 image"
			return
		fi
	fi
	setup_with "$o/go" "" ""
	if TIMEOUT=$LONG_TIMEOUT measure setup_paths "$BIN/ddfs" cp -q -a "$img:/go" "$o/go"; then
		if ! diff -r --no-dereference "$D1DIR" "$o/go" >"$W/diff.out" 2>&1; then
			note "ddfs cp -a IMG:/go differs from the source: $(head -n 2 "$W/diff.out" | tr '\n' ' ')"
		fi
	else
		ddfs_failed "ddfs cp -a IMG:/go OUT"
	fi
	keep "$k/ddfs cp -a IMG:/go OUT"
	setup_with "$o/go" "" ""
	TIMEOUT=$LONG_TIMEOUT measure setup_paths cp -a "$D1DIR" "$o/go" || note "cp -a: $MERR"
	keep "$k/cp -a D1 OUT"
	discard "$o/go"
	setup_with "$o/none" "" ""
	TIMEOUT=$LONG_TIMEOUT measure setup_paths sh -c '"$1" tar-out "$2" | cat >/dev/null' sh "$BIN/ddfs" "$img" ||
		ddfs_failed "ddfs tar-out IMG | cat"
	keep "$k/ddfs tar-out IMG | cat"
	TIMEOUT=$LONG_TIMEOUT measure setup_paths sh -c 'tar -cf - -C "$1" go | cat >/dev/null' sh "$DATA" ||
		note "tar -cf - D1 | cat: $MERR"
	keep "$k/tar -cf - D1 | cat"

	local t r dcp dtar
	dcp=$(get RT "$k/ddfs cp -a IMG:/go OUT")
	dtar=$(get RT "$k/ddfs tar-out IMG | cat")
	for t in "ddfs cp -a IMG:/go OUT" "cp -a D1 OUT" "ddfs tar-out IMG | cat" "tar -cf - D1 | cat"; do
		r="$k/$t"
		COPYOUT_ROWS+=("$(printf '| %-24s | %4s | %8s | %8s | %7s | %9s | %9s |' \
			"$t" "$(fmt_runs "$(get RN "$r")")" "$(fmt_s "$(get RT "$r")")" "$(fmt_mib "$(get RR "$r")")" \
			"$(awk -v b="$D1_BYTES" -v t="$(get RT "$r")" 'BEGIN { if (t !~ /^[0-9.]+$/ || t <= 0) print "-"; else printf "%.0f", b / 1e6 / t }')" \
			"$(ratio "$dcp" "$(get RT "$r")")" "$(ratio "$dtar" "$(get RT "$r")")")")
	done
	echo "bench: copyout: done" >&2
}

# ---------------------------------------------------------------- small: 100,000 small files

SMALL_ROWS=()
SMALL_FILES=0 SMALL_DESC=""
case_small() {
	local src="$DATA/small" d="$W/small" k=small
	mkdir -p "$d"
	echo "bench: generating 100 dirs x 1000 files of 0-4 KiB ..." >&2
	if ! "$GEN" small -seed 1 -dirs 100 -files 1000 -max 4096 "$src" >"$W/gen.out" 2>&1; then
		note "gen small failed: $(head -n 2 "$W/gen.out" | tr '\n' ' ')"
		return
	fi
	SMALL_FILES=$(find "$src" -type f | wc -l)
	SMALL_DESC="$SMALL_FILES files in 100 dirs, 0-4 KiB each, $(du -sb "$src" | awk '{ printf "%.1f MB", $1 / 1e6 }') (bench/gen small -seed 1)"

	setup_with "$d/ddfs.img" "" ""
	if TIMEOUT=$LONG_TIMEOUT measure setup_paths sh -c "$SH_MKFS_DDFS_R" sh "$BIN/mkfs.ddfs" 4G "$src" "$d/ddfs.img"; then
		check_ddfs "$d/ddfs.img" "mkfs.ddfs -r (100k files)"
	else
		ddfs_failed "mkfs.ddfs -r (100k files)"
	fi
	keep "$k/mkfs.ddfs -r" "$(alloc_kib "$d/ddfs.img")"
	rm -f "$d/ddfs.img"
	if [[ $HAVE_BTRFS -eq 1 ]]; then
		setup_with "$d/btrfs.img" "$d/btrfs.img" 4G
		TIMEOUT=$LONG_TIMEOUT measure setup_paths sh -c "$SH_BTRFS_R" sh "$src" "$d/btrfs.img" ||
			note "mkfs.btrfs -r (100k files): $MERR"
		keep "$k/mkfs.btrfs -r" "$(alloc_kib "$d/btrfs.img")"
		rm -f "$d/btrfs.img"
	else
		skip_key "$k/mkfs.btrfs -r"
	fi
	if [[ $HAVE_EXT4 -eq 1 ]]; then
		setup_with "$d/ext4.img" "$d/ext4.img" 4G
		TIMEOUT=$LONG_TIMEOUT measure setup_paths sh -c "$SH_EXT4_D" sh "$src" "$d/ext4.img" ||
			note "mke2fs -d (100k files): $MERR"
		keep "$k/mke2fs -t ext4 -d" "$(alloc_kib "$d/ext4.img")"
		rm -f "$d/ext4.img"
	else
		skip_key "$k/mke2fs -t ext4 -d"
	fi
	if [[ $HAVE_EROFS -eq 1 ]]; then
		setup_with "$d/erofs.img" "" ""
		TIMEOUT=$LONG_TIMEOUT measure setup_paths sh -c "$SH_EROFS" sh "$src" "$d/erofs.img" ||
			note "mkfs.erofs (100k files): $MERR"
		keep "$k/mkfs.erofs" "$(alloc_kib "$d/erofs.img")"
		rm -f "$d/erofs.img"
	else
		skip_key "$k/mkfs.erofs"
	fi
	discard "$src"

	local t r dt
	dt=$(get RT "$k/mkfs.ddfs -r")
	for t in "mkfs.ddfs -r" "mkfs.btrfs -r" "mke2fs -t ext4 -d" "mkfs.erofs"; do
		r="$k/$t"
		SMALL_ROWS+=("$(printf '| %-17s | %4s | %8s | %8s | %8s | %9s | %6s |' \
			"$t" "$(fmt_runs "$(get RN "$r")")" "$(fmt_s "$(get RT "$r")")" \
			"$(per_s "$SMALL_FILES" "$(get RT "$r")")" "$(fmt_mib "$(get RR "$r")")" \
			"$(fmt_kib_mib "$(get RA "$r")")" "$(ratio "$dt" "$(get RT "$r")")")")
	done
	echo "bench: small files: done" >&2
}

# ---------------------------------------------------------------- randwrite: random 4 KiB overwrites

RW_ROWS=()
RW_SIZE=${RW_SIZE:-1G}
RW_WRITES=${RW_WRITES:-20000}
RW_AMP_1000="-"
json_num() { grep -o "\"$1\":[0-9.eE+-]*" "$2" | head -n 1 | cut -d: -f2; }
# randwrite_set TARGET COMMIT: RUNS runs of bench/randwrite; sets the medians in RW_*.
randwrite_set() {
	local target=$1 commit=$2 i d="$W/randwrite" s=() wps=() amp=() ampc=() cs=() mcs=() rs=()
	mkdir -p "$d"
	RW_N=0 RW_ERR=""
	for ((i = 0; i < RUNS; i++)); do
		rm -f "$d/rw.img" "$d/rw.bin"
		if [[ $target == ddfs ]]; then
			"$BIN/mkfs.ddfs" -q -f -b 2G "$d/rw.img" || { RW_ERR="mkfs.ddfs failed"; return 1; }
		fi
		sync -f "$W"
		if [[ $target == ddfs ]]; then
			TIMEOUT=$LONG_TIMEOUT run_once "$RANDWRITE" -img "$d/rw.img" -size "$RW_SIZE" -writes "$RW_WRITES" -commit "$commit"
		else
			TIMEOUT=$LONG_TIMEOUT run_once "$RANDWRITE" -plain "$d/rw.bin" -size "$RW_SIZE" -writes "$RW_WRITES" -commit "$commit"
		fi
		if [[ $RC -ne 0 ]]; then
			RW_ERR=$ERR
			return 1
		fi
		if [[ $target == ddfs && $i -eq 0 ]]; then check_ddfs "$d/rw.img" "randwrite -commit $commit"; fi
		s+=("$(json_num seconds "$W/out")")
		wps+=("$(json_num writes_per_s "$W/out")")
		amp+=("$(json_num amplification "$W/out")")
		ampc+=("$(awk -v w="$(json_num wchar "$W/out")" -v u="$(json_num user_bytes "$W/out")" 'BEGIN { printf "%.4f", w / u }')")
		cs+=("$(json_num commit_s "$W/out")")
		mcs+=("$(json_num max_commit_s "$W/out")")
		rs+=("$R")
		RW_N=$((RW_N + 1))
	done
	rm -f "$d/rw.img" "$d/rw.bin"
	RW_S=$(median "${s[@]}") RW_WPS=$(median "${wps[@]}") RW_AMP=$(median "${amp[@]}")
	RW_AMPC=$(median "${ampc[@]}") RW_CS=$(median "${cs[@]}") RW_MCS=$(median "${mcs[@]}") RW_R=$(largest "${rs[@]}")
}

case_randwrite() {
	local commit target ds
	for commit in 1000 10000; do
		ds="-"
		for target in ddfs plain; do
			if randwrite_set "$target" "$commit"; then
				[[ $target == ddfs ]] && ds=$RW_S
				[[ $target == ddfs && $commit == 1000 ]] && RW_AMP_1000=$RW_AMP
				RW_ROWS+=("$(printf '| %-29s | %6s | %4s | %7s | %8s | %7s | %7s | %8s | %8s | %8s | %6s |' \
					"$([[ $target == ddfs ]] && echo "ddfs (fsys.WriteAt, Sync)" || echo "host file (pwrite, fdatasync)")" \
					"$commit" "$RW_N" "$(fmt_s "$RW_S")" "$(awk -v x="$RW_WPS" 'BEGIN { printf "%.0f", x }')" \
					"$(awk -v x="$RW_AMP" 'BEGIN { printf "%.2f", x }')" "$(awk -v x="$RW_AMPC" 'BEGIN { printf "%.2f", x }')" \
					"$(fmt_s "$RW_CS")" "$(fmt_s "$RW_MCS")" "$(fmt_mib "$RW_R")" \
					"$(if [[ $target == ddfs ]]; then echo -; else ratio "$ds" "$RW_S"; fi)")")
			else
				if [[ $target == ddfs ]]; then
					DDFS_FAILED=1
					note "randwrite ddfs -commit $commit: $RW_ERR"
				else
					note "randwrite host file -commit $commit: $RW_ERR"
				fi
				RW_ROWS+=("$(printf '| %-29s | %6s | %4s | %7s | %8s | %7s | %7s | %8s | %8s | %8s | %6s |' \
					"$target" "$commit" - FAIL - - - - - - -)")
			fi
		done
	done
	echo "bench: randwrite: done" >&2
}

# ---------------------------------------------------------------- mem: one big file in and out

MEM_ROWS=()
MEM_GIB=${MEM_SIZE:-}
MEM_DESC=""
case_mem() {
	local d="$W/mem" avail_kib k=mem
	mkdir -p "$d/src" "$d/out"
	avail_kib=$(df -Pk "$W" | awk 'NR == 2 { print $4 }')
	if [[ -z $MEM_GIB ]]; then
		MEM_GIB=8
		if ((avail_kib < 20 * 1024 * 1024)); then
			MEM_GIB=2
			note "mem: only $((avail_kib / 1024 / 1024)) GiB free in $W: the big file is 2 GiB, not 8 GiB"
		fi
	fi
	echo "bench: generating a $MEM_GIB GiB file ..." >&2
	if ! "$GEN" mixed -seed 1 -size "${MEM_GIB}G" -run 64M "$d/src/big.bin" >"$W/gen.out" 2>&1; then
		note "gen mixed failed: $(head -n 2 "$W/gen.out" | tr '\n' ' ')"
		rm -rf "$d"
		return
	fi
	MEM_DESC="one $MEM_GIB GiB file, every block written: 64 MiB runs of seeded random bytes alternating with 64 MiB runs of zeros (bench/gen mixed)"
	local img="$d/ddfs.img" isz=$((MEM_GIB * 2))G
	setup_with "$img" "" "" "$BIN/mkfs.ddfs" -q -f -b "$isz" "$img"
	if TIMEOUT=$LONG_TIMEOUT measure setup_paths sh -c '"$1" cp -q "$2" "$3:/" && sync -f "$3"' sh "$BIN/ddfs" "$d/src/big.bin" "$img"; then
		check_ddfs "$img" "ddfs cp of the ${MEM_GIB} GiB file"
	else
		ddfs_failed "ddfs cp FILE IMG:/ (${MEM_GIB} GiB)"
	fi
	keep "$k/in" "$(alloc_kib "$img")"
	setup_with "$d/out/big.bin" "" ""
	TIMEOUT=$LONG_TIMEOUT measure setup_paths sh -c 'cp --sparse=always "$1" "$2" && sync -f "$2"' sh "$d/src/big.bin" "$d/out/big.bin" ||
		note "cp --sparse=always (${MEM_GIB} GiB): $MERR"
	keep "$k/cp" "$(alloc_kib "$d/out/big.bin")"
	if [[ $(get RT "$k/in") != FAIL ]]; then
		setup_with "$d/out/big.bin" "" ""
		if TIMEOUT=$LONG_TIMEOUT measure setup_paths sh -c '"$1" cp -q "$2:/big.bin" "$3" && sync -f "$3"' sh "$BIN/ddfs" "$img" "$d/out/big.bin"; then
			[[ $(stat -c %s "$d/out/big.bin") == $(stat -c %s "$d/src/big.bin") ]] ||
				note "ddfs cp IMG:/big.bin OUT: wrong size"
		else
			ddfs_failed "ddfs cp IMG:/big.bin OUT (${MEM_GIB} GiB)"
		fi
		keep "$k/out" "$(alloc_kib "$d/out/big.bin")"
	else
		skip_key "$k/out"
	fi
	rm -rf "$d"
	echo "bench: mem: done" >&2
}

mem_rows() {
	local pt pr
	pt=$(get RT mem/cp) pr=$(get RR mem/cp)
	MEM_ROWS+=("$(printf '| %-32s | %4s | %8s | %8s | %-26s | %8s | %8s | %6s | %-6s |' \
		"ddfs cp FILE IMG:/ (${MEM_GIB} GiB)" "$(fmt_runs "$(get RN mem/in)")" "$(fmt_s "$(get RT mem/in)")" \
		"$(fmt_mib "$(get RR mem/in)")" "cp --sparse=always + sync" "$(fmt_s "$pt")" "$(fmt_mib "$pr")" \
		"$(ratio "$(get RT mem/in)" "$pt")" "$(under "$(get RR mem/in)" 256)")")
	MEM_ROWS+=("$(printf '| %-32s | %4s | %8s | %8s | %-26s | %8s | %8s | %6s | %-6s |' \
		"ddfs cp IMG:/big.bin OUT (${MEM_GIB} GiB)" "$(fmt_runs "$(get RN mem/out)")" "$(fmt_s "$(get RT mem/out)")" \
		"$(fmt_mib "$(get RR mem/out)")" "cp --sparse=always + sync" "$(fmt_s "$pt")" "$(fmt_mib "$pr")" \
		"$(ratio "$(get RT mem/out)" "$pt")" "$(under "$(get RR mem/out)" 256)")")
	MEM_ROWS+=("$(printf '| %-32s | %4s | %8s | %8s | %-26s | %8s | %8s | %6s | %-6s |' \
		"mkfs.ddfs -r (100k small files)" "$(fmt_runs "$(get RN "small/mkfs.ddfs -r")")" "$(fmt_s "$(get RT "small/mkfs.ddfs -r")")" \
		"$(fmt_mib "$(get RR "small/mkfs.ddfs -r")")" "mkfs.btrfs -r" "$(fmt_s "$(get RT "small/mkfs.btrfs -r")")" \
		"$(fmt_mib "$(get RR "small/mkfs.btrfs -r")")" "$(ratio "$(get RT "small/mkfs.ddfs -r")" "$(get RT "small/mkfs.btrfs -r")")" \
		"$(under "$(get RR "small/mkfs.ddfs -r")" 256)")")
}

# ---------------------------------------------------------------- run the groups

START=$(now)
has_case mkfs && case_mkfs
if has_case build || has_case small || has_case randwrite || has_case mem; then build_helpers; fi
if has_case build || has_case copyout; then make_d1 || note "D1 could not be made: build and copyout skipped"; fi
has_case build && [[ -d $D1DIR || $HAVE_GO -eq 1 ]] && case_build
has_case copyout && [[ -d $D1DIR ]] && case_copyout
has_case small && [[ $HAVE_GO -eq 1 ]] && case_small
has_case randwrite && [[ $HAVE_GO -eq 1 ]] && case_randwrite
has_case mem && [[ $HAVE_GO -eq 1 ]] && case_mem
if has_case mem || has_case small; then mem_rows; fi
ELAPSED=$(awk -v a="$START" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }')

# ---------------------------------------------------------------- report

version_of() { "$@" 2>&1 | head -n 1 || true; }
# header FORMAT TITLES...: the header line and a separator under it
header() {
	local fmt=$1 h
	shift
	# shellcheck disable=SC2059
	h=$(printf "$fmt" "$@")
	echo "$h"
	echo "${h//[^|]/-}"
}
target_line() { # target_line WHAT KEY LIMIT_MIB
	local r
	r=$(get RR "$2")
	[[ $r == "-" ]] && return
	echo "  $1: $(under "$r" "$3") ($(fmt_mib "$r") MiB; limit $3 MiB)"
}
{
	echo "# ddfs bench, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), scratch on $(df -PT "$W" | awk 'NR == 2 { print $2 }'), kernel $(uname -r)"
	echo "ddfs: $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)"
	[[ $HAVE_BTRFS -eq 1 ]] && echo "peer: $(version_of mkfs.btrfs --version)"
	[[ $HAVE_EXT4 -eq 1 ]] && echo "peer: $(version_of mke2fs -V)"
	[[ $HAVE_EROFS -eq 1 ]] && echo "peer: erofs-utils $(dpkg-query -W -f '${Version}' erofs-utils 2>/dev/null || echo '?')"
	echo "peer: $(version_of cp --version), $(version_of tar --version)"
	echo "groups: $CASES; whole run ${ELAPSED} s"
	echo "median of $RUNS runs (once when the first run took > $SLOW s: see 'runs'); seconds are wall time incl."
	echo "process start; ratio = ddfs time / peer time (< 1: ddfs faster); MiB = peak RSS (GNU time %M,"
	echo "the largest process of a pipeline or sh -c, the largest of the runs); alloc = space allocated to the outputs (st_blocks)"
	if [[ ${#ROWS[@]} -gt 0 ]]; then
		echo
		echo "## mkfs and check (alloc in KiB)"
		echo
		header '| %-24s | %8s | %-24s | %8s | %6s | %8s | %8s | %10s | %10s |' \
			case "ddfs s" peer "peer s" ratio "ddfs MiB" "peer MiB" "ddfs alloc" "peer alloc"
		printf '%s\n' "${ROWS[@]}"
		echo
		echo "Allocated bytes per image file after mkfs 4x1T (issue: 'well under a second, a few MiB each'):"
		echo "  ddfs:  $A_DEACH"
		echo "  btrfs: $A_BEACH"
		verdict="-"
		if [[ $A_OK -eq 1 ]]; then
			verdict=$(awk -v t="$A_DT" -v each="$A_DEACH" 'BEGIN {
				n = split(each, kv, " "); max = 0
				for (i = 1; i <= n; i++) { split(kv[i], p, "="); if (p[2] + 0 > max) max = p[2] + 0 }
				ok = (t < 0.5 && max <= 8 * 1048576)
				printf "%s (%.3f s, largest file %.2f MiB allocated; limits 0.5 s, 8 MiB)", ok ? "PASS" : "FAIL", t, max / 1048576 }')
		fi
		echo "  ddfs target: $verdict"
	fi
	if [[ ${#BUILD_ROWS[@]} -gt 0 ]]; then
		echo
		echo "## Building an image from a directory"
		echo
		[[ -n $D1_DESC ]] && echo "D1: $D1_DESC"
		[[ -n $BIG_DESC ]] && echo "big: $BIG_DESC"
		echo "Every writer ends with 'sync -f OUTPUT' inside the timed command (ddfs commits with fdatasync anyway)."
		echo "Images are 4 GiB sparse files (mkfs.ddfs -b 4G; truncate for btrfs and ext4); mkfs.erofs sizes its"
		echo "own; cp -a copies into a folder on the same disk (alloc: du -sk). ddfs cp -r puts the tree at IMG:/go."
		echo "ratio columns: the time of that ddfs way / the time of the row (< 1: ddfs faster)."
		echo
		header '| %-5s | %-22s | %4s | %8s | %8s | %9s | %9s | %9s |' \
			data tool runs seconds MiB "alloc MiB" "-r ratio" "cp ratio"
		printf '%s\n' "${BUILD_ROWS[@]}"
		echo
		echo "Targets (issue: peak RSS < 100 MiB):"
		target_line "mkfs.ddfs -r D1" "build/D1/mkfs.ddfs -r" 100
		target_line "mkfs.ddfs + ddfs cp -r D1" "build/D1/mkfs.ddfs + ddfs cp -r" 100
		target_line "mkfs.ddfs -r big" "build/big/mkfs.ddfs -r" 100
		target_line "mkfs.ddfs + ddfs cp -r big" "build/big/mkfs.ddfs + ddfs cp -r" 100
	fi
	if [[ ${#COPYOUT_ROWS[@]} -gt 0 ]]; then
		echo
		echo "## Copying D1 out of an image"
		echo
		echo "IMG is the 'mkfs.ddfs + ddfs cp -r' image of D1. Nothing is synced: neither ddfs cp nor cp fsyncs"
		echo "(setup removes the output and syncs before each run). tar -cf - | cat is the read limit."
		echo "MB/s = D1 apparent bytes / seconds. ratio columns: that ddfs command's time / the row's time."
		echo
		header '| %-24s | %4s | %8s | %8s | %7s | %9s | %9s |' \
			command runs seconds MiB "MB/s" "cp ratio" "tar ratio"
		printf '%s\n' "${COPYOUT_ROWS[@]}"
	fi
	if [[ ${#SMALL_ROWS[@]} -gt 0 ]]; then
		echo
		echo "## Small files"
		echo
		echo "$SMALL_DESC; 4 GiB images; each writer ends with sync -f."
		echo
		header '| %-17s | %4s | %8s | %8s | %8s | %9s | %6s |' \
			tool runs seconds "files/s" MiB "alloc MiB" ratio
		printf '%s\n' "${SMALL_ROWS[@]}"
	fi
	if [[ ${#RW_ROWS[@]} -gt 0 ]]; then
		echo
		echo "## Random 4 KiB overwrites into a $RW_SIZE file ($RW_WRITES writes)"
		echo
		echo "bench/randwrite: the file is written sequentially and synced (untimed), then $RW_WRITES writes of"
		echo "4 KiB at random 4 KiB-aligned offsets, a commit (fsys.Sync; fdatasync for the host file) every"
		echo "'commit' writes and at the end. seconds, writes/s and amp cover that random phase only."
		echo "amp = bytes written / user bytes, from /proc/self/io: write_bytes (page-cache bytes dirtied; the"
		echo "kernel counts a whole large folio when a 4 KiB write dirties one, so a plain overwrite counts"
		echo "far more than it writes) and wchar (bytes passed to write calls). Neither sees the host"
		echo "filesystem's own journal. ratio = ddfs seconds / host-file seconds."
		echo
		header '| %-29s | %6s | %4s | %7s | %8s | %7s | %7s | %8s | %8s | %8s | %6s |' \
			target commit runs seconds "writes/s" "amp wb" "amp wc" "commit s" "max cmt" MiB ratio
		printf '%s\n' "${RW_ROWS[@]}"
		echo
		echo "Target (issue: amplification <= 4x at a commit every 1,000 writes):"
		if [[ $RW_AMP_1000 != "-" ]]; then
			echo "  ddfs: $(awk -v a="$RW_AMP_1000" 'BEGIN { printf "%s (%.2fx by write_bytes)", (a <= 4) ? "PASS" : "FAIL", a }')"
		fi
	fi
	if [[ ${#MEM_ROWS[@]} -gt 0 ]]; then
		echo
		echo "## Memory"
		echo
		[[ -n $MEM_DESC ]] && echo "big file: $MEM_DESC."
		echo "ddfs stores zero runs as holes and writes the copy out sparse; the peer is cp --sparse=always,"
		echo "which does the same. Every command ends with sync -f on its output. target: peak RSS < 256 MiB."
		echo
		header '| %-32s | %4s | %8s | %8s | %-26s | %8s | %8s | %6s | %-6s |' \
			case runs "ddfs s" "ddfs MiB" peer "peer s" "peer MiB" ratio target
		printf '%s\n' "${MEM_ROWS[@]}"
	fi
	if [[ ${#NOTES[@]} -gt 0 ]]; then
		echo
		echo "Notes:"
		printf -- '- %s\n' "${NOTES[@]}"
	fi
} >"$W/report"

mkdir -p "$RESULTS_DIR"
cp "$W/report" "$RESULTS"
echo >&2
cat "$W/report"
echo >&2
echo "bench: written to ${RESULTS#"$ROOT"/}" >&2

exit "$DDFS_FAILED"
