#!/usr/bin/env bash
# ddfs mount vs fuse2fs (e2fsprogs, ext4 image) vs kernel btrfs (loop
# device), issue 17; not run by make test or make bench. One run, rows
# interleaved (each row runs on the three filesystems one after another,
# so noise hits all three): sequential write of SIZE_MB (dd conv=fsync)
# and read back cold, tar -x of the Go tree (D1) and grep -r over it cold,
# fio 4K random read and write IOPS (O_DIRECT, FIO_TIME seconds on a
# FIO_MB file, FIO_ROUNDS interleaved rounds, medians; unpinned, and with
# fio and the servers on CPU 0; for the two FUSE servers also their CPU
# time and the bytes they read (rchar) per request, which move less than
# IOPS on this VM). Random reads run on three layouts of the file (issue
# 37): from mkfs.ddfs -r and from ddfs cp (8 MiB extents), and written by
# fio through the mount (4 KiB pieces), with ddfs mounted -o ro for them.
# Prints each row with the ratios ddfs/fuse2fs and
# ddfs/btrfs (>1: ddfs ahead), then unmounts and fscks the ddfs image.
# The fsync rows (issue 37): FSYNC_IOS random 4 KiB overwrites of fio.dat
# with an fsync after each (fsync-1) and after every 1000 (fsync-1000),
# ddfs against kernel btrfs on its loop device: bytes written to the image
# per byte fio wrote (ddfs: the server's wchar; btrfs: the loop device's
# sectors written), through a final sync, and the time; FSYNC_ROUNDS
# interleaved rounds, medians. FSYNC_ONLY=1 runs only them.
# Needs root (loop device, drop_caches), fuse3, fuse2fs, btrfs-progs, fio.
# PROFILE=FILE writes a CPU profile of the ddfs mount (whole run) to FILE.
set -euo pipefail
BIN=${BIN:-bin}
SIZE_MB=${SIZE_MB:-1024}
D1=${D1:-$(go env GOROOT 2>/dev/null || echo /usr/local/go)}
FIO_MB=${FIO_MB:-256}
FIO_TIME=${FIO_TIME:-8}
FIO_ROUNDS=${FIO_ROUNDS:-5}
IMG_GB=${IMG_GB:-8}
FSYNC_IOS=${FSYNC_IOS:-2000}
FSYNC_ROUNDS=${FSYNC_ROUNDS:-3}
OUT=${OUT:-}
for t in fuse2fs mkfs.btrfs fio fusermount3; do
	command -v "$t" >/dev/null || { echo "bench/fuse.sh: needs $t" >&2; exit 1; }
done
root=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-fuse.XXXXXX")
loop=
cleanup() {
	for fs in ddfs fuse2fs btrfs; do
		mountpoint -q "$root/$fs" && { fusermount3 -u "$root/$fs" 2>/dev/null || umount -l "$root/$fs"; }
	done
	[ -n "$loop" ] && losetup -d "$loop"
	sleep 1
	rm -rf "$root"
}
trap cleanup EXIT INT TERM
mkdir -p "$root"/{ddfs,fuse2fs,btrfs}
# The fio files of the first two layouts: in the image before the mount.
mkdir -p "$root/seed"
dd if=/dev/urandom of="$root/seed/mkfs.dat" bs=1M count="$FIO_MB" status=none
"$BIN/mkfs.ddfs" -q -b "${IMG_GB}G" -r "$root/seed" "$root/ddfs.img"
"$BIN/ddfs" cp "$root/seed/mkfs.dat" "$root/ddfs.img:/cp.dat"
truncate -s "${IMG_GB}G" "$root/ext4.img" "$root/btrfs.img"
mkfs.ext4 -q -F "$root/ext4.img"
loop=$(losetup -f --show "$root/btrfs.img")
mkfs.btrfs -q -f "$loop" >/dev/null
# ddmount [OPTS]: (re)mount the ddfs image, its server's pid in ddfspid;
# a profile (PROFILE) covers the last mount.
ddfspid=
ddmount() {
	if [ -n "$ddfspid" ]; then
		fusermount3 -u "$root/ddfs"
		for _ in $(seq 100); do kill -0 "$ddfspid" 2>/dev/null || break; sleep 0.1; done
	fi
	DDFS_MOUNT_CPUPROFILE=${PROFILE:-} "$BIN/ddfs" mount "$@" "$root/ddfs.img" "$root/ddfs"
	ddfspid=$(pgrep -n -f "ddfs mount.* $root/ddfs.img")
}
ddmount
fuse2fs "$root/ext4.img" "$root/fuse2fs" -o rw
f2fspid=$(pgrep -n -f "fuse2fs $root/ext4.img")
mount "$loop" "$root/btrfs"
FSES="ddfs fuse2fs btrfs"

cold() { sync; echo 3 >/proc/sys/vm/drop_caches; }
declare -A val cpu rd
# timed ROW FS CMD...: seconds of CMD, kept as val[ROW,FS]
timed() {
	local row=$1 fs=$2 t0 t1
	shift 2
	t0=$(date +%s.%N)
	"$@"
	t1=$(date +%s.%N)
	val[$row,$fs]=$(echo "$t1 - $t0" | bc -l)
}
# report ROW UNIT: one line, ratios so that >1 means ddfs is ahead
report() {
	local row=$1 unit=$2 d f b
	d=${val[$row,ddfs]} f=${val[$row,fuse2fs]} b=${val[$row,btrfs]}
	if [ "$unit" = s ]; then
		printf '%-12s %10.2f %10.2f %10.2f  s     %6.2fx %6.2fx\n' "$row" "$d" "$f" "$b" \
			"$(echo "$f / $d" | bc -l)" "$(echo "$b / $d" | bc -l)"
	else
		printf '%-12s %10.0f %10.0f %10.0f  %-5s %6.2fx %6.2fx\n' "$row" "$d" "$f" "$b" "$unit" \
			"$(echo "$d / $f" | bc -l)" "$(echo "$d / $b" | bc -l)"
	fi
}

tarmb=0 tree=
if [ "${FIO_ONLY:-0}" != 1 ]; then # FIO_ONLY=1: the fio rows alone
	dd if=/dev/urandom of="$root/src" bs=1M count="$SIZE_MB" status=none
	tar -C "$(dirname "$D1")" -cf "$root/tree.tar" "$(basename "$D1")"
	tree=$(basename "$D1")
	tarmb=$(($(stat -c %s "$root/tree.tar") >> 20))
fi
echo "# bench/fuse.sh $(date -u +%FT%TZ) $(uname -r), $(nproc) cores, loadavg at start: $(cat /proc/loadavg)"
echo "# seq rows: $SIZE_MB MiB; tree: $D1 ($tarmb MiB tar); fio: 4K O_DIRECT psync, $FIO_MB MiB file, $FIO_TIME s x $FIO_ROUNDS rounds interleaved, medians; -1cpu rows: fio and the servers on CPU 0"
ra() { cat "/sys/class/bdi/$(mountpoint -d "$1")/read_ahead_kb" 2>/dev/null || echo "?"; }
echo "# read_ahead_kb: ddfs $(ra "$root/ddfs") (the mount sets it as root), fuse2fs $(ra "$root/fuse2fs"), btrfs's loop device $(cat "/sys/block/$(basename "$loop")/queue/read_ahead_kb")"
echo "# ratios: ddfs/fuse2fs and ddfs/btrfs, >1 = ddfs ahead (time rows: their time / ddfs time)"
printf '%-12s %10s %10s %10s  %-5s %7s %7s\n' row ddfs fuse2fs btrfs unit vs-f2fs vs-btrfs
if [ "${FIO_ONLY:-0}" != 1 ]; then
	for fs in $FSES; do cold; timed seq-write "$fs" dd if="$root/src" of="$root/$fs/big" bs=1M conv=fsync status=none; done
	for fs in $FSES; do val[seq-write,$fs]=$(echo "$SIZE_MB / ${val[seq-write,$fs]}" | bc -l); done
	report seq-write MiB/s
	for fs in $FSES; do cold; timed seq-read "$fs" dd if="$root/$fs/big" of=/dev/null bs=1M status=none; done
	for fs in $FSES; do val[seq-read,$fs]=$(echo "$SIZE_MB / ${val[seq-read,$fs]}" | bc -l); done
	report seq-read MiB/s
	for fs in $FSES; do rm -f "$root/$fs/big"; done
	rm -f "$root/src"
	# tar -x and then a file's fsync (the writes are on their way to the disk
	# in all three; ddfs and btrfs commit a transaction there).
	for fs in $FSES; do cold; timed tar-x "$fs" sh -c "tar -C '$root/$fs' -xf '$root/tree.tar' && sync '$root/$fs/$tree/VERSION' 2>/dev/null || sync '$root/$fs'"; done
	report tar-x s
	for fs in $FSES; do cold; timed grep-r "$fs" sh -c "grep -r -c ddfs-no-such-string '$root/$fs/$tree' >/dev/null || true"; done
	report grep-r s
fi
# fiorun FS RW CPUS FILE: IOPS; for the FUSE servers also their CPU and
# bytes read (rchar: from the image) per request in cpu[FS] and rd[FS]
fiorun() {
	local pid= a b ra rb iops
	case $1 in ddfs) pid=$ddfspid ;; fuse2fs) pid=$f2fspid ;; esac
	[ -n "$pid" ] && a=$(awk '{print $14 + $15}' "/proc/$pid/stat") ra=$(awk '/^rchar/ {print $2}' "/proc/$pid/io")
	iops=$(taskset -c "$3" fio --name=r --directory="$root/$1" --filename="$4" --size="${FIO_MB}m" --bs=4k --rw="$2" \
		--ioengine=psync --direct=1 --time_based --runtime="$FIO_TIME" --output-format=json 2>/dev/null |
		python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(j["read"]["iops"]+j["write"]["iops"])')
	if [ -n "$pid" ]; then
		b=$(awk '{print $14 + $15}' "/proc/$pid/stat") rb=$(awk '/^rchar/ {print $2}' "/proc/$pid/io")
		# clock ticks (user + system) over the requests fio made
		cpu[$1]+="$(echo "($b - $a) * 1000000 / $(getconf CLK_TCK) / ($iops * $FIO_TIME)" | bc -l) "
		rd[$1]+="$(echo "($rb - $ra) / ($iops * $FIO_TIME)" | bc -l) "
	fi
	echo "$iops"
}
# The layouts: mkfs.dat and cp.dat (in the ddfs image already; copied in
# on the others), fio.dat written by fio in 4 KiB pieces.
for fs in $FSES; do
	[ "$fs" = ddfs ] || { cp "$root/seed/mkfs.dat" "$root/$fs/mkfs.dat"; cp "$root/seed/mkfs.dat" "$root/$fs/cp.dat"; }
	fio --name=w --filename="$root/$fs/fio.dat" --size="${FIO_MB}m" --bs=4k --rw=write --ioengine=psync --end_fsync=1 --output=/dev/null
done
# median of the values on stdin
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
# pin CPUS: every thread of the two FUSE servers on CPUS ("0,1": unpinned)
pin() { taskset -a -c -p "$1" "$ddfspid" >/dev/null; taskset -a -c -p "$1" "$f2fspid" >/dev/null; }
# fiorows ROW RW CPUS FILE: FIO_ROUNDS rounds, each running fio on the three
# filesystems one after another (load changes hit all three), medians.
# With CPUS=0, fio and both servers share CPU 0: no cross-CPU wake-ups,
# so the row compares the work per request. Unpinned, the rate follows
# where the scheduler puts the server threads (same CPU as fio: 2-3x
# the IOPS of the other one on this VM), which moves from run to run.
fiorows() {
	local row=$1 rw=$2 cpus=$3 file=$4 fs r iops
	declare -A runs=()
	cpu=() rd=()
	pin "$cpus"
	for r in $(seq "$FIO_ROUNDS"); do
		# fiorun runs in this shell (not $(...)), so its cpu[] entries stay
		for fs in $FSES; do cold; fiorun "$fs" "$rw" "$cpus" "$file" >"$root/iops"; read -r iops <"$root/iops"; runs[$fs]+="$iops "; done
	done
	pin 0-$(($(nproc) - 1))
	for fs in $FSES; do val[$row,$fs]=$(printf '%s\n' ${runs[$fs]} | median); done
	report "$row" IOPS
	printf '  server per request (medians; CPU user+system, bytes read): ddfs %.1f us %.0f B, fuse2fs %.1f us %.0f B\n' \
		"$(printf '%s\n' ${cpu[ddfs]} | median)" "$(printf '%s\n' ${rd[ddfs]} | median)" \
		"$(printf '%s\n' ${cpu[fuse2fs]} | median)" "$(printf '%s\n' ${rd[fuse2fs]} | median)"
}
# written FS: bytes written so far to the image of FS
written() {
	case $1 in
	ddfs) awk '/^wchar/ {print $2}' "/proc/$ddfspid/io" ;;
	btrfs) awk '{printf "%.0f\n", $7 * 512}' "/sys/block/$(basename "$loop")/stat" ;;
	esac
}
# fsyncrows ROW EVERY: FSYNC_IOS random 4K overwrites, fsync every EVERY
fsyncrows() {
	local row=$1 every=$2 fs r a b t0 t1
	declare -A bpb=() secs=()
	for r in $(seq "$FSYNC_ROUNDS"); do
		for fs in ddfs btrfs; do
			sync
			a=$(written "$fs") t0=$(date +%s.%N)
			fio --name=s --filename="$root/$fs/fio.dat" --size="${FIO_MB}m" --bs=4k --rw=randwrite --ioengine=psync \
				--fsync="$every" --number_ios="$FSYNC_IOS" --output=/dev/null
			sync -f "$root/$fs/fio.dat"
			t1=$(date +%s.%N) b=$(written "$fs")
			bpb[$fs]+="$(echo "($b - $a) / ($FSYNC_IOS * 4096)" | bc -l) "
			secs[$fs]+="$(echo "$t1 - $t0" | bc -l) "
		done
	done
	local db bb dt bt
	db=$(printf '%s\n' ${bpb[ddfs]} | median) bb=$(printf '%s\n' ${bpb[btrfs]} | median)
	dt=$(printf '%s\n' ${secs[ddfs]} | median) bt=$(printf '%s\n' ${secs[btrfs]} | median)
	printf '%-12s %10.1f %10s %10.1f  %-5s %7s %7.2f\n' "$row" "$db" - "$bb" B/B - "$(echo "$bb / $db" | bc -l)"
	printf '%-12s %10.2f %10s %10.2f  %-5s %7s %7.2f\n' "$row-time" "$dt" - "$bt" s - "$(echo "$bt / $dt" | bc -l)"
}
all=0-$(($(nproc) - 1))
if [ "${FSYNC_ONLY:-0}" = 1 ]; then
	fsyncrows fsync-1 1
	fsyncrows fsync-1000 1000
	exit 0
fi
ddmount -o ro
fiorows rr-mkfs randread "$all" mkfs.dat
fiorows rr-cp randread "$all" cp.dat
fiorows rr-fio randread "$all" fio.dat
fiorows rr-cp-1cpu randread 0 cp.dat
ddmount
fiorows fio-randwrite randwrite "$all" fio.dat
fiorows fio-rw-1cpu randwrite 0 fio.dat
fsyncrows fsync-1 1
fsyncrows fsync-1000 1000
fusermount3 -u "$root/ddfs"
for _ in $(seq 100); do kill -0 "$ddfspid" 2>/dev/null || break; sleep 0.1; done
"$BIN/fsck.ddfs" "$root/ddfs.img" | tail -1
