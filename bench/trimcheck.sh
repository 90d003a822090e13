#!/usr/bin/env bash
# bench/trimcheck.sh — what trimtool's cross-check costs (issue 36): trimtool
# as it is (it walks every tree against the extent tree's free list, pkg/inuse,
# before it discards) against trimtool built at BASE (the commit before the
# cross-check: "today's time") and against fstrim -v on a loop-mounted ext4
# image holding the same number of free 4 KiB fragments (bench/fragment, as
# bench/discard.sh's frag case):
#   dry     trimtool --dry-run, now vs BASE: the walk's cost alone (no discards)
#   trim    trimtool, now vs BASE, and fstrim -v (ext4, loop): every run starts
#           from a copy of the same fragmented image (cp --sparse=always, then
#           an untimed sync), so each one punches the same holes
# Rounds: RUNS; each round runs every tool once, the order turned round by
# round, so noise on the shared machine hits all of them. Wall time is the
# median, the peak RSS the largest of the runs (/usr/bin/time).
#
# Environment:
#   BIN    directory with mkfs.ddfs and trimtool (default: bin)
#   BASE   the commit for the "before" trimtool (default 3634d01: no commit
#          between it and the cross-check, b481e1a, touches pkg/trim, pkg/store
#          or trimtool); built from `git archive` in the scratch dir
#   NOW    a commit to build the "now" trimtool from the same way (default:
#          BIN/trimtool)
#   FRAGS  free fragments (1000000)   SIZE image size (100G)   RUNS (3)
#   DRY_RUNS  rounds of the dry runs (default RUNS)
#   K      scratch (default /tmp/trimcheck), removed at the end unless
#          KEEP_IMAGES=1; fragmented images already there (ddfs.orig,
#          ext4.orig) are reused; the copies the runs trim stay until the end
#          (RUNS x 3 x ~9 GiB at 1M fragments)
#   ROOT   the ddfs tree (default: this script's parent)
#   OUT    results file (default bench/results/trimcheck-latest.txt)
# Needs root for the ext4 loop mount; without it the fstrim row is skipped.
set -euo pipefail
export LC_ALL=C PATH="$PATH:/usr/sbin:/sbin"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=${ROOT:-$(cd "$HERE/.." && pwd)}
BIN=$(cd "${BIN:-$ROOT/bin}" && pwd)
BASE=${BASE:-3634d01}
FRAGS=${FRAGS:-1000000} SIZE=${SIZE:-100G} RUNS=${RUNS:-3} DRY_RUNS=${DRY_RUNS:-${RUNS:-3}}
K=${K:-/tmp/trimcheck}
OUT=${OUT:-$HERE/results/trimcheck-latest.txt}
mnt=$K/mnt
cleanup() {
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	if [[ ${KEEP_IMAGES:-0} == 1 ]]; then rm -rf "$K/base" "$K/now" "$K"/ddfs.[0-9]* "$K"/ext4.[0-9]*; else rm -rf "$K"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for t in mkfs.ddfs trimtool; do [[ -x "$BIN/$t" ]] || { echo "bench: $BIN/$t missing (make build)" >&2 && exit 1; }; done
peer=0
if [[ $(id -u) -eq 0 ]] && command -v losetup >/dev/null; then
	for t in mkfs.ext4:e2fsprogs fstrim:util-linux; do
		command -v "${t%%:*}" >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${t#*:}" >/dev/null 2>&1 || true
	done
	command -v mkfs.ext4 >/dev/null && command -v fstrim >/dev/null && peer=1
fi
rm -rf "$K/base" "$K/now" && mkdir -p "$K/base" "$mnt"
(cd "$ROOT" && go build -o "$K/fragment" ./bench/fragment)
build() { # build REV NAME: trimtool of REV into $K/trimtool-NAME
	mkdir -p "$K/$2"
	(cd "$ROOT" && git archive "$1" | tar -x -C "$K/$2")
	(cd "$K/$2" && go build -o "$K/trimtool-$2" ./trimtool)
}
build "$BASE" base
if [[ -n ${NOW:-} ]]; then build "$NOW" now; else cp "$BIN/trimtool" "$K/trimtool-now"; fi

exec > >(tee "$OUT")
echo "# trimtool's cross-check vs before it ($BASE) and fstrim, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), runs=$RUNS, dry runs=$DRY_RUNS"
if [[ -n ${NOW:-} ]]; then
	echo "# now: $NOW ($(cd "$ROOT" && git rev-parse --short "$NOW"))"
else
	echo "# now: $BIN/trimtool (the tree is at $(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet HEAD -- pkg || echo ', with uncommitted changes under pkg/'))"
fi

# The fragmented images, once; every timed run starts from a copy.
if [[ ! -s $K/ddfs.orig ]]; then
	t0=$EPOCHREALTIME
	nice -n 10 "$BIN/mkfs.ddfs" -q -b "$SIZE" "$K/ddfs.orig"
	nice -n 10 "$K/fragment" ddfs "$K/ddfs.orig" "$FRAGS"
	echo "# ddfs: $SIZE image, $FRAGS free 4 KiB fragments made in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }') s"
fi
echo "# ddfs image: $(($(stat -c %s "$K/ddfs.orig") >> 30)) GiB, $(($(stat -c %b "$K/ddfs.orig") * 512 / 1048576)) MiB allocated (FRAGS=$FRAGS when it was made)"
if [[ $peer == 1 && ! -s $K/ext4.orig ]]; then
	t0=$EPOCHREALTIME
	truncate -s "$SIZE" "$K/ext4.orig"
	mkfs.ext4 -q -F "$K/ext4.orig"
	mount -o loop "$K/ext4.orig" "$mnt"
	nice -n 10 "$K/fragment" punch "$mnt/f" "$FRAGS"
	umount "$mnt"
	echo "# ext4: $SIZE image, $FRAGS free 4 KiB fragments (a file with every second block punched) made in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }') s"
fi
[[ $peer == 1 ]] && echo "# ext4 image: $(($(stat -c %b "$K/ext4.orig") * 512 / 1048576)) MiB allocated"

# timed CMD...: wall time (EPOCHREALTIME) and peak RSS (KiB) into T, R.
timed() {
	local t0=$EPOCHREALTIME t1
	/usr/bin/time -f "%M" -o "$K/t.rss" "$@" >"$K/t.out" 2>&1 || { echo "bench: $* failed:" >&2; cat "$K/t.out" >&2; exit 1; }
	t1=$EPOCHREALTIME
	T=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') R=$(tail -n 1 "$K/t.rss")
}
# fresh IMG: a new copy of IMG.orig at $K/IMG.N (in $img), on disk before the
# clock starts. The copies are removed only at the end: removing a file with
# a million holes took minutes on the loaded host, and would run into the
# next timed run.
copies=0
fresh() {
	copies=$((copies + 1))
	img=$K/$1.$copies
	cp --sparse=always "$K/$1.orig" "$img"
	sync
}
declare -A TS RS
run() { # run NAME: one timed run of NAME into TS, RS
	case $1 in
	dry-now | dry-base)
		timed "$K/trimtool-${1#dry-}" --dry-run --json "$K/ddfs.orig"
		;;
	trim-now | trim-base)
		fresh ddfs
		timed "$K/trimtool-${1#trim-}" --json "$img"
		;;
	fstrim)
		fresh ext4
		mount -o loop "$img" "$mnt"
		sync
		timed fstrim -v "$mnt"
		umount "$mnt"
		;;
	esac
	grep -q '"discards"' "$K/t.out" && D[$1]=$(grep -o '"discards": *[0-9]*' "$K/t.out" | head -n 1 | grep -o '[0-9]*$')
	[[ $1 == fstrim ]] && D[$1]=$(cat "$K/t.out")
	TS[$1]+="$T " RS[$1]+="$R "
}
declare -A D
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
maxrss() { tr ' ' '\n' | grep . | sort -n | tail -n 1 | awk '{printf "%.0f", $1/1024}'; }
rounds() { # rounds COUNT NAME...: COUNT rounds, the order turned by one each round
	local count=$1 && shift
	local names=("$@") i j n=$#
	for ((i = 0; i < count; i++)); do
		for ((j = 0; j < n; j++)); do run "${names[$(((i + j) % n))]}"; done
	done
}
row() { # row LABEL NAME [REF]: median s, largest RSS, runs, ratio to REF's median
	local s r ratio=""
	s=$(echo "${TS[$2]}" | median) r=$(echo "${RS[$2]}" | maxrss)
	[[ -n ${3:-} ]] && ratio=$(echo "${TS[$3]}" | median | awk -v s="$s" '{printf "%.2f", s / $1}')
	printf '%-34s %8s %8s  %-28s %8s\n' "$1" "$s" "$r" "${TS[$2]}" "$ratio"
}

rounds "$DRY_RUNS" dry-now dry-base
names=(trim-now trim-base)
[[ $peer == 1 ]] && names+=(fstrim)
rounds "$RUNS" "${names[@]}"
printf '%-34s %8s %8s  %-28s %8s\n' "" "s (med)" "MiB max" "runs (s)" "ratio"
row "trimtool --dry-run, $BASE" dry-base
row "trimtool --dry-run, now" dry-now dry-base
row "trimtool, $BASE" trim-base
row "trimtool, now" trim-now trim-base
echo "  discards: now ${D[trim-now]:-?}, $BASE ${D[trim-base]:-?}"
if [[ $peer == 1 ]]; then
	row "fstrim -v (ext4, loop)" fstrim
	echo "  fstrim: ${D[fstrim]}"
	echo "  -> trimtool now / fstrim: $(echo "${TS[fstrim]}" | median | awk -v s="$(echo "${TS[trim-now]}" | median)" '{printf "%.2f", s / $1}') (target <= 1.0)"
else
	echo "  note: fstrim row skipped (needs root, losetup, mkfs.ext4, fstrim)"
fi
echo "  -> trimtool now / $BASE: $(echo "${TS[trim-base]}" | median | awk -v s="$(echo "${TS[trim-now]}" | median)" '{printf "%.2f", s / $1}') (target <= 1.5)"
