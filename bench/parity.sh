#!/usr/bin/env bash
# Parity profiles benchmark (issue 40). On N loop-backed image files (N in DEVS, default
# "4 6") and a D2-like set (COPIES x the Go tree + COPIES VM-like files of VM_SIZE):
#   write  copy the set in (ddfs cp -r; cp -a + sync on the mounted peers)
#   read   copy it out with the page cache dropped (ddfs tar-out; tar of the mount), through cat
#   scrub  ddfs scrub; btrfs scrub start -B; mdadm "check" until idle
#   rebuild one member deleted and replaced by a blank one: ddfs device replace --degraded;
#          btrfs replace start -B on a degraded mount; mdadm --add and recovery until idle
# for ddfs raid5/raid6 against raid0 on N-1 devices and raid1 on N (the same files), mdadm
# raid5/raid6 + ext4 and btrfs raid5/raid6 (metadata raid1 on ddfs and btrfs). Runs are
# interleaved (ddfs, md, btrfs for each profile, RUNS rounds); medians, the worst peak RSS
# of each ddfs row, ratios against the peers. The parity share of a write's CPU comes from
# a CPU profile of one raid6 copy-in (samples in klauspost/reedsolomon / all samples). The
# read limit of a rebuild is reading every allocated byte of the surviving images, cold; its
# copy limit adds writing (and syncing) a survivor's allocated bytes once, as the new member
# must hold them: with every image on one disk, reads and writes share it.
# Needs root (loop devices, mount, mdadm, the kernel's md and btrfs); a peer that cannot run
# is skipped with a note.
#
# Environment: BIN (bin), DEVS ("4 6"), COPIES (4), VM_SIZE (256M), RUNS (1), TMPDIR.
# Output: the table on stdout and in bench/results/parity-latest.txt.
set -euo pipefail
export LC_ALL=C PATH="$PATH:/usr/sbin:/sbin"
BIN=${BIN:-bin}
DEVS=${DEVS:-4 6}
COPIES=${COPIES:-4}
VM_SIZE=${VM_SIZE:-256M}
RUNS=${RUNS:-1}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=$(cd "$BIN" && pwd)
root=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-parity.XXXXXX")
mnt=$root/mnt
loops=()
md=/dev/md/ddfsbench mdok=0
release() {
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	[[ $mdok -eq 1 && -e $md ]] && { mdadm --stop "$md" >/dev/null 2>&1 || true; }
	for l in "${loops[@]}"; do losetup -d "$l" 2>/dev/null || true; done
	loops=()
	return 0
}
trap 'release; rm -rf "$root"' EXIT
note() { echo "  note: $*"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
median() { sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
cold=0
if sync && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then cold=1; fi
drop() { [[ $cold -eq 1 ]] && sync && echo 3 >/proc/sys/vm/drop_caches; return 0; }
# timed NAME CMD...: wall seconds into t-NAME, peak RSS (KiB) into m-NAME.
timed() {
	local name=$1 t0=$EPOCHREALTIME
	shift
	/usr/bin/time -a -o "$root/m-$name" -f %M "$@"
	echo "$EPOCHREALTIME - $t0" | bc >>"$root/t-$name"
}
# timed_sh NAME 'SHELL': timed of a pipeline (RSS of the shell's children: the worst one).
timed_sh() { timed "$1" bash -c "$2"; }

# The read limit of a rebuild: every allocated byte of the surviving images
# (SEEK_DATA/SEEK_HOLE: their holes cost nothing to skip), in 1 MiB reads.
# The write half of the copy limit: BYTES of random data in 4 MiB writes, then fdatasync.
cat >"$root/writedata.py" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
buf, left = os.urandom(4 << 20), int(sys.argv[2])
while left > 0:
    left -= os.write(fd, buf[:min(len(buf), left)])
os.fdatasync(fd)
os.close(fd)
PY
cat >"$root/readdata.py" <<'PY'
import os, sys
for path in sys.argv[1:]:
    fd = os.open(path, os.O_RDONLY)
    end, pos = os.fstat(fd).st_size, 0
    while pos < end:
        try:
            pos = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:
            break
        hole = os.lseek(fd, pos, os.SEEK_HOLE)
        while pos < hole:
            n = len(os.pread(fd, min(1 << 20, hole - pos), pos))
            if n == 0:
                break
            pos += n
    os.close(fd)
PY

out=$HERE/results/parity-latest.txt
mkdir -p "$HERE/results"
exec > >(tee "$out")

SRC=$(go env GOROOT)
mkdir -p "$root/data" "$mnt"
for i in $(seq 1 "$COPIES"); do cp -a "$SRC" "$root/data/go$i"; done
(cd "$HERE/.." && go build -o "$root/gen" ./bench/gen)
"$root/gen" big -seed 7 -n "$COPIES" -size "$VM_SIZE" "$root/data/vm" >/dev/null
set_b=$(du -sb "$root/data" | cut -f1)
nfiles=$(find "$root/data" | wc -l)
echo "# parity benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(load), set: $nfiles files, $((set_b >> 20)) MiB; devices: $DEVS; runs=$RUNS; page cache $([[ $cold -eq 1 ]] && echo dropped || echo warm)"

mdok=0 btrfsok=0
if [[ $(id -u) -eq 0 ]] && command -v losetup >/dev/null; then
	command -v mdadm >/dev/null && command -v mkfs.btrfs >/dev/null ||
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends btrfs-progs mdadm >/dev/null 2>&1 || true
	command -v mkfs.btrfs >/dev/null && grep -qw btrfs /proc/filesystems && btrfsok=1
	# The md driver must be in the kernel: /proc/mdstat exists once it is.
	command -v mdadm >/dev/null && [[ -e /proc/mdstat ]] && mdok=1
fi
[[ $btrfsok -eq 1 ]] || note "btrfs peer skipped (needs root, losetup, btrfs-progs, the kernel's btrfs)"
[[ $mdok -eq 1 ]] || note "mdadm peer skipped (needs root, mdadm and the kernel's md driver: no /proc/mdstat on this kernel)"

# images N SIZE: N blank image files i0..i(N-1) of SIZE bytes.
images() {
	rm -f "$root"/i*.img "$root/new.img"
	for i in $(seq 0 $(($1 - 1))); do truncate -s "$2" "$root/i$i.img"; done
}
attach() {
	local f
	for f in "$@"; do loops+=("$(losetup -f --show "$f")"); done
}

# ddfs_row PROF N NAME: write and read back; with parity, scrub and rebuild.
ddfs_row() {
	local prof=$1 n=$2 name=$3 imgs=() i
	images "$n" "$dev_b"
	for i in $(seq 0 $((n - 1))); do imgs+=("$root/i$i.img"); done
	"$BIN/mkfs.ddfs" -q -f -d "$prof" -m raid1 "${imgs[@]}"
	drop
	timed "$name-write" "$BIN/ddfs" cp -r "$root/data" "$root/i0.img:/"
	drop
	timed_sh "$name-read" "'$BIN/ddfs' tar-out '$root/i0.img:/data' | cat >/dev/null"
	[[ $prof == raid5 || $prof == raid6 ]] || return 0
	drop
	timed_sh "$name-scrub" "'$BIN/ddfs' scrub '$root/i0.img' >/dev/null"
	rm "$root/i1.img"
	truncate -s "$dev_b" "$root/new.img"
	drop
	local t0=$EPOCHREALTIME
	python3 "$root/readdata.py" "$root"/i*.img
	echo "$EPOCHREALTIME - $t0" | bc >>"$root/t-$name-readlimit"
	t0=$EPOCHREALTIME
	python3 "$root/writedata.py" "$root/w.tmp" "$(du -B1 "$root/i2.img" | cut -f1)"
	echo "$EPOCHREALTIME - $t0" | bc >>"$root/t-$name-writelimit"
	rm -f "$root/w.tmp"
	drop
	timed_sh "$name-rebuild" "'$BIN/ddfs' device replace --degraded '$root/i0.img' 2 '$root/new.img' >/dev/null"
	"$BIN/fsck.ddfs" -n "$root/i0.img" >/dev/null || echo "  FAIL: fsck after the $name rebuild"
}

# md_row LEVEL N NAME: mdadm LEVEL + ext4.
md_row() {
	local level=$1 n=$2 name=$3 i f=()
	images "$n" "$dev_b"
	for i in $(seq 0 $((n - 1))); do f+=("$root/i$i.img"); done
	attach "${f[@]}"
	mdadm --create "$md" -q --run --assume-clean --level="$level" --raid-devices="$n" "${loops[@]}" >/dev/null 2>&1
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$md" >/dev/null
	mount "$md" "$mnt"
	drop
	timed_sh "$name-write" "cp -a '$root/data' '$mnt/' && sync -f '$mnt'"
	drop
	timed_sh "$name-read" "tar -cf - -C '$mnt' data | cat >/dev/null"
	local dev sys
	dev=$(readlink -f "$md")
	sys=/sys/block/$(basename "$dev")/md
	drop
	timed_sh "$name-scrub" "echo check >$sys/sync_action; while [[ \$(cat $sys/sync_action) != idle ]]; do sleep 0.1; done"
	umount "$mnt"
	mdadm "$md" -q --fail "${loops[1]}" --remove "${loops[1]}" >/dev/null 2>&1
	truncate -s "$dev_b" "$root/new.img"
	attach "$root/new.img"
	drop
	timed_sh "$name-rebuild" "mdadm '$md' -q --add '${loops[-1]}' && sleep 0.2 && while [[ \$(cat $sys/sync_action) != idle ]]; do sleep 0.1; done"
	release
}

# btrfs_row LEVEL N NAME: btrfs LEVEL, metadata raid1.
btrfs_row() {
	local level=$1 n=$2 name=$3 i f=()
	images "$n" "$dev_b"
	for i in $(seq 0 $((n - 1))); do f+=("$root/i$i.img"); done
	attach "${f[@]}"
	mkfs.btrfs -q -f -d "$level" -m raid1 "${loops[@]}" >/dev/null 2>&1
	mount "${loops[0]}" "$mnt"
	drop
	timed_sh "$name-write" "cp -a '$root/data' '$mnt/' && sync -f '$mnt'"
	drop
	timed_sh "$name-read" "tar -cf - -C '$mnt' data | cat >/dev/null"
	drop
	timed "$name-scrub" btrfs scrub start -B -q "$mnt"
	umount "$mnt"
	local gone=${loops[1]}
	losetup -d "$gone"
	truncate -s "$dev_b" "$root/new.img"
	attach "$root/new.img"
	mount -o degraded "${loops[0]}" "$mnt"
	drop
	timed_sh "$name-rebuild" "btrfs replace start -B 2 '${loops[-1]}' '$mnt' >/dev/null"
	release
}

# ddfs_cpu: the parity share of a raid6 write's CPU.
ddfs_cpu() {
	local n=$1
	images "$n" "$dev_b"
	"$BIN/mkfs.ddfs" -q -f -d raid6 -m raid1 "$root"/i*.img
	DDFS_CPUPROFILE=$root/cpu.prof "$BIN/ddfs" cp -r "$root/data" "$root/i0.img:/"
	go tool pprof -top "$BIN/ddfs" "$root/cpu.prof" 2>/dev/null | awk '
		/Total samples/ { for (i = 1; i <= NF; i++) if ($i == "=") { t = $(i+1); sub(/s.*/, "", t) } }
		/reedsolomon/ && $1 ~ /s$/ { v = $1; sub(/m?s$/, "", v); if ($1 ~ /ms$/) v /= 1000; p += v }
		END { if (t > 0) printf "%.1f", 100 * p / t; else printf "?" }'
}

for n in $DEVS; do
	dev_b=$(((set_b * 3 / (n - 2) / 2 + (1 << 30)) >> 20 << 20)) # raid6 on n holds the set, with room
	for r in $(seq 1 "$RUNS"); do
		for prof in raid5 raid6; do
			ddfs_row "$prof" "$n" "ddfs-$prof-$n"
			[[ $mdok -eq 1 ]] && md_row "${prof#raid}" "$n" "md-$prof-$n"
			[[ $btrfsok -eq 1 ]] && btrfs_row "$prof" "$n" "btrfs-$prof-$n"
		done
		ddfs_row raid0 $((n - 1)) "ddfs-raid0-$((n - 1))"
		ddfs_row raid1 "$n" "ddfs-raid1-$n"
	done
	cpu[$n]=$(ddfs_cpu "$n")
done
release

med() { [[ -s $root/t-$1 ]] && median <"$root/t-$1" || echo ""; }
rss() { [[ -s $root/m-$1 ]] && sort -g "$root/m-$1" | tail -1 | awk '{printf "%.0f", $1 / 1024}' || echo ""; }
ratio() { [[ -n $1 && -n $2 ]] && echo "scale=2; $1 / $2" | bc | sed 's/^\./0./' || echo "-"; }
mbps() { [[ -n $1 ]] && echo "scale=0; $set_b / 1048576 / $1" | bc || echo "-"; }
echo
printf '%-16s %-8s %9s %8s %9s %8s %9s %9s %9s\n' row op seconds MiB/s "rss MiB" "÷md" "÷btrfs" "÷raid0" "÷raid1"
for n in $DEVS; do
	for prof in raid5 raid6; do
		for op in write read scrub rebuild; do
			d=$(med "ddfs-$prof-$n-$op")
			r0="-" r1="-"
			if [[ $op == write || $op == read ]]; then
				r0=$(ratio "$(med "ddfs-raid0-$((n - 1))-$op")" "$d")
				r1=$(ratio "$(med "ddfs-raid1-$n-$op")" "$d")
			fi
			printf '%-16s %-8s %9s %8s %9s %8s %9s %9s %9s\n' "ddfs $prof x$n" "$op" "$d" "$(mbps "$d")" "$(rss "ddfs-$prof-$n-$op")" \
				"$(ratio "$(med "md-$prof-$n-$op")" "$d")" "$(ratio "$(med "btrfs-$prof-$n-$op")" "$d")" "$r0" "$r1"
			for peer in md btrfs; do
				p=$(med "$peer-$prof-$n-$op")
				[[ -n $p ]] && printf '%-16s %-8s %9s %8s\n' "$peer $prof x$n" "$op" "$p" "$(mbps "$p")"
			done
		done
		lim=$(med "ddfs-$prof-$n-readlimit")
		reb=$(med "ddfs-$prof-$n-rebuild")
		printf '%-16s %-8s %9s   ddfs rebuild at %s of the read limit (target >= 0.8)\n' "read limit x$n" "rebuild" "$lim" "$(ratio "$lim" "$reb")"
		cl=$(echo "$lim + $(med "ddfs-$prof-$n-writelimit")" | bc)
		printf '%-16s %-8s %9s   ddfs rebuild at %s of the copy limit (read the survivors, write one member)\n' "copy limit x$n" "rebuild" "$cl" "$(ratio "$cl" "$reb")"
	done
	for prof in "raid0 $((n - 1))" "raid1 $n"; do
		set -- $prof
		for op in write read; do
			d=$(med "ddfs-$1-$2-$op")
			printf '%-16s %-8s %9s %8s %9s\n' "ddfs $1 x$2" "$op" "$d" "$(mbps "$d")" "$(rss "ddfs-$1-$2-$op")"
		done
	done
	echo "parity share of a raid6 x$n write's CPU: ${cpu[$n]}% (samples in klauspost/reedsolomon)"
done
echo "# ratios: peer seconds / ddfs seconds (above 1: ddfs faster); ÷raid0: ddfs raid0 on N-1 devices / this row (write target >= 0.8); load after: $(load)"
