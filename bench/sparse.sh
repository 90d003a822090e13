#!/usr/bin/env bash
# Sparse files (issue 12): a SIZE file holding 3 bytes in the middle, copied in
# once, then timed: cp -a out (ddfs vs GNU cp --sparse=always of the host file),
# tar-out (ddfs vs GNU tar -S of the host file), tar-in of ddfs's archive, and
# GNU tar -xS of ddfs's archive. Reports seconds, archive bytes and the blocks
# allocated by each copy. OLD=path/to/an/older/ddfs adds its cp -a and tar-out
# (capped at CAP seconds each) for a before/after line.
set -euo pipefail
BIN=${BIN:-bin}
SIZE=${SIZE:-100G}
OLD=${OLD:-}
CAP=${CAP:-120}
root=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-sparse.XXXXXX")
trap 'rm -rf "$root"' EXIT
now() { date +%s.%N; }
secs() { printf '%.3f' "$(echo "$2 - $1" | bc)"; }
blocks() { echo "$(($(stat -c %b "$1") * 512 / 1024)) KiB"; }
bytes=$(numfmt --from=iec "$SIZE")
truncate -s "$SIZE" "$root/sp"
printf abc | dd of="$root/sp" bs=1 seek=$((bytes / 2)) conv=notrunc status=none
"$BIN/mkfs.ddfs" -q -b 1G "$root/img"
"$BIN/ddfs" cp -a "$root/sp" "$root/img:/sp"
echo "sparse file of $SIZE with 3 bytes at $((bytes / 2))"
row() { printf '  %-34s %8s s   %s\n' "$1" "$2" "$3"; }
t0=$(now); mkdir "$root/o1"; "$BIN/ddfs" cp -a "$root/img:/sp" "$root/o1/"; t1=$(now)
row "ddfs cp -a out" "$(secs "$t0" "$t1")" "allocated $(blocks "$root/o1/sp")"
t0=$(now); cp --sparse=always "$root/sp" "$root/o2"; t1=$(now)
row "cp --sparse=always (host)" "$(secs "$t0" "$t1")" "allocated $(blocks "$root/o2")"
t0=$(now); "$BIN/ddfs" tar-out "$root/img:/" >"$root/a.tar"; t1=$(now)
row "ddfs tar-out" "$(secs "$t0" "$t1")" "archive $(stat -c %s "$root/a.tar") bytes"
t0=$(now); tar -C "$root" -cSf "$root/g.tar" sp; t1=$(now)
row "tar -cS (host)" "$(secs "$t0" "$t1")" "archive $(stat -c %s "$root/g.tar") bytes"
"$BIN/mkfs.ddfs" -q -b 1G "$root/img2"
t0=$(now); "$BIN/ddfs" tar-in "$root/img2:/" <"$root/a.tar"; t1=$(now)
row "ddfs tar-in (its own archive)" "$(secs "$t0" "$t1")" ""
mkdir "$root/x"
t0=$(now); tar -C "$root/x" -xSf "$root/a.tar"; t1=$(now)
same=no; cmp -s <(dd if="$root/x/sp" bs=1 skip=$((bytes / 2)) count=3 status=none) <(printf abc) && same=yes
row "tar -xS of ddfs's archive" "$(secs "$t0" "$t1")" "allocated $(blocks "$root/x/sp"), data same: $same"
if [[ -n $OLD ]]; then
	mkdir "$root/o3"
	t0=$(now); timeout "$CAP" "$OLD" cp -a "$root/img:/sp" "$root/o3/" || true; t1=$(now)
	row "OLD ddfs cp -a out" "$(secs "$t0" "$t1")" "(capped at $CAP s)"
	t0=$(now); timeout "$CAP" "$OLD" tar-out "$root/img:/" | wc -c >"$root/oldsize" || true; t1=$(now)
	row "OLD ddfs tar-out" "$(secs "$t0" "$t1")" "archive $(cat "$root/oldsize") bytes (capped at $CAP s)"
fi
