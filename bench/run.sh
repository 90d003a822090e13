#!/usr/bin/env bash
# bench/run.sh — ddfs tools against their peers (btrfs-progs, e2fsprogs).
#
# Cases (median of RUNS runs each; ddfs and the peer are measured in the same run):
#   a. mkfs of 4 sparse 1 TiB image files, data raid10, metadata raid1c3
#      (plus one row per --csum algorithm)
#   b. mkfs of one 8 GiB image file
#   c. offline check of the fresh images from a. and b.
#
# Environment:
#   BIN      directory with mkfs.ddfs, ddfs, fsck.ddfs   (default: bin)
#   RUNS     runs per measurement, the median is reported (default: 3)
#   TMPDIR   where the scratch directory is made          (default: /tmp)
#   TIMEOUT  seconds after which one command is killed    (default: 30)
#
# Output: a table on stdout, also written to bench/results/latest.txt.
# Exit status: 0, or 1 if a ddfs tool failed (a peer failing is only noted).

# The cleanup trap and the setup_* functions are called indirectly (trap, measure).
# shellcheck disable=SC2317
set -euo pipefail

export LC_ALL=C
export PATH="$PATH:/usr/sbin:/sbin"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${BIN:-bin}
RUNS=${RUNS:-3}
TIMEOUT=${TIMEOUT:-30}
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

# measure SETUP CMD...: runs SETUP (untimed) then CMD, RUNS times.
# Sets MT (median seconds or FAIL), MR (median peak RSS KiB or "-"), MERR.
measure() {
	local setup=$1 i ts=() rs=()
	shift
	MERR=""
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
	done
	MT=$(median "${ts[@]}")
	MR=$(median "${rs[@]}")
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

# ---------------------------------------------------------------- a. mkfs 4 x 1 TiB

echo "bench: ddfs tools from $BIN, $RUNS runs each, scratch in $W" >&2

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

# ---------------------------------------------------------------- report

version_of() { "$@" 2>&1 | head -n 1 || true; }
{
	echo "# ddfs bench, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), scratch on $(df -PT "$W" | awk 'NR == 2 { print $2 }')"
	echo "ddfs: $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)"
	[[ $HAVE_BTRFS -eq 1 ]] && echo "peer: $(version_of mkfs.btrfs --version)"
	[[ $HAVE_EXT4 -eq 1 ]] && echo "peer: $(version_of mke2fs -V)"
	echo "median of $RUNS runs; seconds are wall time incl. process start; ratio = ddfs/peer (< 1: ddfs faster);"
	echo "RSS = peak resident set (GNU time %M); alloc = KiB allocated to all image files afterwards (st_blocks)"
	echo
	printf '| %-24s | %8s | %-24s | %8s | %6s | %8s | %8s | %10s | %10s |\n' \
		case "ddfs s" peer "peer s" ratio "ddfs MiB" "peer MiB" "ddfs alloc" "peer alloc"
	printf '|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n' \
		"$(printf -- '-%.0s' {1..26})" "----------" "$(printf -- '-%.0s' {1..26})" "----------" \
		"--------" "----------" "----------" "------------" "------------"
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
