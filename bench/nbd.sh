#!/usr/bin/env bash
# Copy-in through NBD (issue 16): `ddfs cp -r TREE` into an image served by
# nbdkit's file plugin (on a unix socket and on 127.0.0.1) vs the same
# image file opened directly, each on a fresh mkfs, page cache warm for the
# source. ROUNDS rounds of the three ways in turn, the order turned around
# every round; prints the median wall seconds and MB/s per way and the
# ratio to the direct file. Not run by make test.
# Needs nbdkit (apt-get install nbdkit).
set -euo pipefail
BIN=${BIN:-bin}
TREE=${TREE:-$(go env GOROOT)/src}
ROUNDS=${ROUNDS:-3}
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
	rm -f "$root/pid" "$root/sock"
	nbdkit -f --exit-with-parent --pidfile "$root/pid" "$@" file "file=$img" &
	pid=$!
	for _ in $(seq 200); do [ -s "$root/pid" ] && return; sleep 0.02; done
	echo "nbdkit did not start" >&2
	exit 1
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }
once() { # once SPEC: fresh mkfs on SPEC, then the copy; prints its seconds
	"$BIN/mkfs.ddfs" -q -f "$1" >/dev/null
	local t0 t1
	t0=$(date +%s.%N)
	"$BIN/ddfs" cp -r "$TREE" "$1:/"
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc
}
way() { # way NAME: one copy the named way (starting and stopping its server)
	case $1 in
	direct) once "$img" ;;
	unix) serve -U "$root/sock" && once "nbd+unix:///e?socket=$root/sock" && stop ;;
	tcp) serve -i 127.0.0.1 -p "$port" && once "nbd://127.0.0.1:$port/e" && stop ;;
	esac
}
truncate -s "$SIZE" "$img"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "# bench/nbd.sh $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(nbdkit --version 2>&1 | head -1); loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# copy-in of $TREE ($((bytes / 1000000)) MB) into a $SIZE image, $ROUNDS rounds, medians"
declare -A ts=()
for ((r = 0; r < ROUNDS; r++)); do
	order="direct unix tcp"
	[ $((r % 2)) = 1 ] && order="tcp unix direct"
	for w in $order; do ts[$w]+="$(way "$w") "; done
done
med() { printf '%s\n' ${ts[$1]} | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
d=$(med direct)
for w in direct unix tcp; do
	case $w in direct) name="file, direct" ;; unix) name="nbd+unix (file plugin)" ;; tcp) name="nbd tcp (file plugin)" ;; esac
	awk -v n="$name" -v s="$(med "$w")" -v d="$d" -v by="$bytes" \
		'BEGIN { printf "%-22s %7.2f s %8.1f MB/s  %.2fx the direct time\n", n, s, by / s / 1e6, s / d }'
done
"$BIN/fsck.ddfs" "$img" >/dev/null && echo "fsck of the last image: clean"
