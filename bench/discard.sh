#!/usr/bin/env bash
# Discard benchmark (issue 7), three groups, peers in the same run:
#  postmark  PostMark-like workload through the Go API with discard off, sync and
#            async: transactions/s (the transaction phase, as PostMark reports it),
#            ops/s over all phases, discards issued. Medians of RUNS.
#  frag      offline trim of a 100 GiB image with FRAGS free 4 KiB fragments:
#            trimtool vs fstrim -v on a loop-mounted ext4 image with the same
#            free layout (a file with every second block punched out).
#  giveback  space given back to the host: a 1 GiB image, D1 copied in, every second
#            file removed: ddfs + trimtool, ddfs with async discard (no trimtool),
#            ext4 and btrfs loop images with fstrim (shared/BENCH.md's trim case).
# Needs root for the loop mounts; peers are skipped with a note otherwise.
set -euo pipefail
BIN=${BIN:-bin}
RUNS=${RUNS:-3}
FRAGS=${FRAGS:-1000000}
PM_FILES=${PM_FILES:-5000}
PM_TX=${PM_TX:-30000}
PM_RUNS=${PM_RUNS:-5}
CASES=${CASES:-postmark frag giveback}
D1=${D1:-/usr/local/go}
root=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-discard.XXXXXX")
mnt=$root/mnt
mkdir -p "$mnt"
cleanup() {
	mountpoint -q "$mnt" && umount "$mnt"
	rm -rf "$root"
}
trap cleanup EXIT
has_case() { [[ " $CASES " == *" $1 "* ]]; }
note() { echo "  note: $*"; }
now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc; }
alloc_mib() { echo "$(($(stat -c %b "$1") * 512 / 1048576))"; }
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
root_ok=0
[[ $(id -u) -eq 0 ]] && command -v losetup >/dev/null && root_ok=1
for t in mkfs.ext4:e2fsprogs mkfs.btrfs:btrfs-progs fstrim:util-linux; do
	if ! command -v "${t%%:*}" >/dev/null && [[ $root_ok -eq 1 ]]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${t#*:}" >/dev/null 2>&1 || true
	fi
done
go build -o "$root/postmark" ./bench/postmark
go build -o "$root/fragment" ./bench/fragment
echo "# discard benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, runs=$RUNS"

if has_case postmark; then
	echo "## postmark: $PM_FILES files of 4-64 KiB, $PM_TX transactions, commit every 200; medians of $PM_RUNS interleaved runs"
	printf '%-8s %10s %10s %10s %12s %10s\n' policy "tx/s" "ops/s" discards "MiB disc." "seconds"
	declare -A tx disc
	for p in off sync async; do : >"$root/pm-$p"; done
	# Interleaved, so the host disk's slow drifts hit every policy alike.
	for _ in $(seq "$PM_RUNS"); do
		for p in off sync async; do
			rm -f "$root/pm.img"
			"$BIN/mkfs.ddfs" -q -b 4G "$root/pm.img"
			"$root/postmark" -img "$root/pm.img" -discard "$p" -files "$PM_FILES" -tx "$PM_TX" >>"$root/pm-$p"
		done
	done
	for p in off sync async; do
		tx[$p]=$(jq .tx_per_sec "$root/pm-$p" | median)
		ops=$(jq .ops_per_sec "$root/pm-$p" | median)
		disc[$p]=$(jq .discards "$root/pm-$p" | median)
		mib=$(jq '.discard_bytes / 1048576' "$root/pm-$p" | median)
		s=$(jq .seconds "$root/pm-$p" | median)
		printf '%-8s %10.0f %10.0f %10d %12.0f %10.2f\n' "$p" "${tx[$p]}" "$ops" "${disc[$p]}" "$mib" "$s"
	done
	echo "  -> async tx/s = $(echo "scale=3; ${tx[async]} / ${tx[off]}" | bc)x off (target >= 0.95); sync $(echo "scale=3; ${tx[sync]} / ${tx[off]}" | bc)x off"
	echo "  -> sync issued $(echo "scale=1; ${disc[sync]} / ${disc[async]}" | bc)x the discards of async (target >= 10)"
fi

if has_case frag; then
	echo "## offline trim: 100 GiB image, $FRAGS free 4 KiB fragments"
	rm -f "$root/fr.img"
	"$BIN/mkfs.ddfs" -q -b 100G "$root/fr.img"
	t0=$(now); "$root/fragment" ddfs "$root/fr.img" "$FRAGS"; t1=$(now)
	echo "  (made the fragments in $(secs "$t0" "$t1") s)"
	t0=$(now); "$BIN/trimtool" --dry-run --json "$root/fr.img" >"$root/dry.json"; t1=$(now)
	printf '%-34s %8.2f s  %9d discards\n' "trimtool --dry-run" "$(secs "$t0" "$t1")" "$(jq '.devices[0].discards' "$root/dry.json")"
	before=$(alloc_mib "$root/fr.img")
	t0=$(now); "$BIN/trimtool" --json "$root/fr.img" >"$root/trim.json"; t1=$(now)
	ddfs_t=$(secs "$t0" "$t1")
	printf '%-34s %8.2f s  %9d discards  image %d -> %d MiB\n' "trimtool" "$ddfs_t" "$(jq '.devices[0].discards' "$root/trim.json")" "$before" "$(alloc_mib "$root/fr.img")"
	rm -f "$root/fr.img"
	if [[ $root_ok -eq 1 ]] && command -v mkfs.ext4 >/dev/null && command -v fstrim >/dev/null; then
		truncate -s 100G "$root/ext4.img"
		mkfs.ext4 -q -F "$root/ext4.img"
		mount -o loop "$root/ext4.img" "$mnt"
		# Like trimtool, this first fstrim discards all free space: the
		# fragments and the never-used rest.
		"$root/fragment" punch "$mnt/f" "$FRAGS"
		sync
		before=$(alloc_mib "$root/ext4.img")
		t0=$(now); out=$(fstrim -v "$mnt"); t1=$(now)
		umount "$mnt"
		ext4_t=$(secs "$t0" "$t1")
		printf '%-34s %8.2f s  (%s)  image %d -> %d MiB\n' "fstrim -v (ext4, loop)" "$ext4_t" "$out" "$before" "$(alloc_mib "$root/ext4.img")"
		echo "  -> trimtool took $(echo "scale=2; $ddfs_t / $ext4_t" | bc)x the time of fstrim on ext4"
		rm -f "$root/ext4.img"
	else
		note "ext4 peer skipped (needs root, losetup, mkfs.ext4, fstrim)"
	fi
fi

if has_case giveback; then
	echo "## space given back: 1 GiB image, $D1 copied in, every second file removed"
	find "$D1" -type f | sort | awk 'NR % 2 == 0' | sed "s|^$D1/||" >"$root/half"
	printf '%-34s %10s %10s %10s %8s\n' setup "copied MiB" "after rm" "after trim" "trim s"
	for mode in trimtool async; do
		rm -f "$root/g.img"
		"$BIN/mkfs.ddfs" -q -b 1G "$root/g.img"
		[[ $mode == async ]] && "$BIN/trimtool" policy "$root/g.img" async >/dev/null
		"$BIN/ddfs" cp -r "$D1" "$root/g.img:/d1"
		a=$(alloc_mib "$root/g.img")
		t0=$(now)
		sed 's|^|'"$root"'/g.img:/d1/|' "$root/half" | xargs -d '\n' "$BIN/ddfs" rm
		t1=$(now)
		b=$(alloc_mib "$root/g.img")
		if [[ $mode == trimtool ]]; then
			t0=$(now); "$BIN/trimtool" "$root/g.img" >/dev/null; t1=$(now)
			printf '%-34s %10d %10d %10d %8.2f\n' "ddfs + trimtool" "$a" "$b" "$(alloc_mib "$root/g.img")" "$(secs "$t0" "$t1")"
		else
			printf '%-34s %10d %10d %10s %8s\n' "ddfs, discard async (rm: $(secs "$t0" "$t1") s)" "$a" "$b" "-" "-"
		fi
		"$BIN/fsck.ddfs" --check-data "$root/g.img" >/dev/null || echo "  FAIL: fsck after $mode"
	done
	if [[ $root_ok -eq 1 ]]; then
		for fs in ext4 btrfs; do
			command -v "mkfs.$fs" >/dev/null || { note "$fs skipped"; continue; }
			rm -f "$root/p.img"; truncate -s 1G "$root/p.img"
			"mkfs.$fs" -q -f "$root/p.img" >/dev/null 2>&1 || "mkfs.$fs" -q -F "$root/p.img" >/dev/null
			mount -o loop "$root/p.img" "$mnt"
			fstrim "$mnt" >/dev/null 2>&1 || true
			cp -a "$D1/." "$mnt/"
			sync
			a=$(alloc_mib "$root/p.img")
			(cd "$mnt" && xargs -d '\n' rm -f <"$root/half")
			sync
			b=$(alloc_mib "$root/p.img")
			t0=$(now); fstrim "$mnt"; t1=$(now)
			umount "$mnt"
			printf '%-34s %10d %10d %10d %8.2f\n' "$fs + fstrim (loop)" "$a" "$b" "$(alloc_mib "$root/p.img")" "$(secs "$t0" "$t1")"
		done
	else
		note "ext4/btrfs peers skipped (needs root and losetup)"
	fi
fi
