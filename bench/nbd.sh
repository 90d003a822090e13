#!/usr/bin/env bash
# Copy-in through NBD (issue 16): `ddfs cp -r TREE` into an image served by
# nbdkit's file plugin (on a unix socket and on 127.0.0.1) vs the same
# image file opened directly, each on a fresh mkfs, page cache warm for the
# source. Prints wall seconds and MB/s per way. Not run by make test.
# Needs nbdkit (apt-get install nbdkit).
set -euo pipefail
BIN=${BIN:-bin}
TREE=${TREE:-$(go env GOROOT)/src/net}
SIZE=${SIZE:-1G}
root=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-nbd.XXXXXX")
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$root"; }
trap cleanup EXIT
if ! command -v nbdkit >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nbdkit >/dev/null
fi
bytes=$(du -sb --apparent-size "$TREE" | cut -f1)
tar -cf - -C "$(dirname "$TREE")" "$(basename "$TREE")" >/dev/null # warm the source
img=$root/disk.img
serve() { # serve ARGS...: nbdkit on the image until the next serve/stop
	rm -f "$root/pid"
	nbdkit -f --exit-with-parent --pidfile "$root/pid" "$@" file "file=$img" &
	pid=$!
	for _ in $(seq 200); do [ -s "$root/pid" ] && return; sleep 0.02; done
	echo "nbdkit did not start" >&2
	exit 1
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }
timed() { # timed NAME SPEC: fresh mkfs on SPEC, then the copy, timed
	"$BIN/mkfs.ddfs" -q -f "$2" >/dev/null
	local t0 t1
	t0=$(date +%s.%N)
	"$BIN/ddfs" cp -r "$TREE" "$2:/"
	t1=$(date +%s.%N)
	awk -v n="$1" -v a="$t0" -v b="$t1" -v by="$bytes" \
		'BEGIN { s = b - a; printf "%-22s %7.2f s %8.1f MB/s\n", n, s, by / s / 1e6 }'
}
truncate -s "$SIZE" "$img"
echo "copy-in of $TREE ($((bytes / 1000000)) MB) into a $SIZE image"
timed "file, direct" "$img"
serve -U "$root/sock"
timed "nbd+unix (file plugin)" "nbd+unix:///e?socket=$root/sock"
stop
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
serve -i 127.0.0.1 -p "$port"
timed "nbd tcp (file plugin)" "nbd://127.0.0.1:$port/e"
stop
"$BIN/fsck.ddfs" "$img" >/dev/null && echo "fsck of the last image: clean"
