#!/usr/bin/env bash
# ddfs mount smoke benchmark (issue 17; not run by make test or make bench):
# sequential write and read of SIZE through the FUSE mount, tar -x of a tree
# (D1, default the Go tree), grep -r over it; seconds and MiB/s per row, then
# unmount and fsck. The comparison with fuse2fs and kernel btrfs the issue
# asks for is not done here.
set -euo pipefail
BIN=${BIN:-bin}
SIZE_MB=${SIZE_MB:-1024}
D1=${D1:-/usr/local/go}
root=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-fuse.XXXXXX")
mnt=$root/mnt
mkdir -p "$mnt"
cleanup() {
	mountpoint -q "$mnt" && fusermount3 -u "$mnt"
	sleep 1
	rm -rf "$root"
}
trap cleanup EXIT
"$BIN/mkfs.ddfs" -q -b 8G "$root/a.img"
"$BIN/ddfs" mount "$root/a.img" "$mnt"
row() { # row NAME SECONDS [MB]
	if [ -n "${3:-}" ]; then
		printf '%-14s %8.2f s %8.1f MiB/s\n' "$1" "$2" "$(echo "$3 / $2" | bc -l)"
	else
		printf '%-14s %8.2f s\n' "$1" "$2"
	fi
}
dd if=/dev/urandom of="$root/src" bs=1M count="$SIZE_MB" status=none
s=$(
	st=$(date +%s.%N)
	dd if="$root/src" of="$mnt/big" bs=1M conv=fsync status=none
	echo "$(date +%s.%N) - $st" | bc
)
row seq-write "$s" "$SIZE_MB"
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
s=$(
	st=$(date +%s.%N)
	dd if="$mnt/big" of=/dev/null bs=1M status=none
	echo "$(date +%s.%N) - $st" | bc
)
row seq-read "$s" "$SIZE_MB"
rm -f "$root/src"
tar -C "$(dirname "$D1")" -cf "$root/tree.tar" "$(basename "$D1")"
s=$(
	st=$(date +%s.%N)
	tar -C "$mnt" -xf "$root/tree.tar"
	echo "$(date +%s.%N) - $st" | bc
)
row tar-x "$s" "$(($(stat -c %s "$root/tree.tar") >> 20))"
s=$(
	st=$(date +%s.%N)
	grep -r -c ddfs-no-such-string "$mnt/$(basename "$D1")" >/dev/null || true
	echo "$(date +%s.%N) - $st" | bc
)
row grep-r "$s"
fusermount3 -u "$mnt"
for i in $(seq 50); do "$BIN/fsck.ddfs" -q "$root/a.img" >/dev/null 2>&1 && break; sleep 0.2; done
"$BIN/fsck.ddfs" "$root/a.img"
