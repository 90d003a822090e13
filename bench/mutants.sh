#!/bin/sh
# Mutation testing of the core packages with gremlins (issue 12): for each package,
# how many mutants the tests kill, how many live, how many no test covers, and the
# efficacy (killed / (killed + lived)). `make mutants` runs it; it is CPU-heavy
# (one `go test` per mutant), so it runs niced, one package at a time, one worker.
# (Not --test-cpu: gremlins v0.6.0 passes "-cpu N" as one argument, go test
# rejects it, and every mutant then counts as killed.)
#
#   PKGS="format pkg/btree" bench/mutants.sh     # only some packages
#   OUT=/tmp/m.txt bench/mutants.sh              # table elsewhere (default bench/results/mutants.txt)
#   KEEP_JSON=/tmp/mut bench/mutants.sh          # also keep gremlins' report of each package
#   WORKERS=2 bench/mutants.sh                   # mutants tested at once (default 1)
#
# The per-mutant timeout is gremlins' own: TIMEOUT_COEF times the package's
# coverage run. A mutant that times out is caught (the test did not pass): the
# efficacy here counts it as killed, (killed + timed-out) / (killed + timed-out + lived).
set -eu
GO=${GO:-go}
GREMLINS_VERSION=v0.6.0
PKGS=${PKGS:-format pkg/btree pkg/alloc pkg/volume pkg/check}
OUT=${OUT:-bench/results/mutants.txt}
TIMEOUT_COEF=${TIMEOUT_COEF:-5}
WORKERS=${WORKERS:-1}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ddfs-mutants.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

GREMLINS=$(command -v gremlins || true)
if [ -z "$GREMLINS" ]; then
	GOBIN="$WORK/bin" $GO install github.com/go-gremlins/gremlins/cmd/gremlins@$GREMLINS_VERSION
	GREMLINS="$WORK/bin/gremlins"
fi

{
	echo "# gremlins $GREMLINS_VERSION, default mutators, -tags ddfs_invariants, $WORKERS worker(s), timeout ${TIMEOUT_COEF}x the coverage run; $(date -u +%Y-%m-%d) $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
	printf '%-12s %7s %6s %12s %10s %9s\n' package killed lived not-covered timed-out efficacy
} >"$WORK/table"

for p in $PKGS; do
	echo "mutants: $p" >&2
	# -count=1: a test result cached from an earlier run (a timeout among
	# them) must never stand for a mutant's run.
	GOFLAGS="${GOFLAGS:-} -count=1" nice "$GREMLINS" unleash --silent --workers "$WORKERS" --tags ddfs_invariants \
		--timeout-coefficient "$TIMEOUT_COEF" -o "$WORK/out.json" "./$p" >"$WORK/log" 2>&1 ||
		{ cat "$WORK/log" >&2; exit 1; }
	[ -n "${KEEP_JSON:-}" ] && mkdir -p "$KEEP_JSON" && cp "$WORK/out.json" "$KEEP_JSON/$(echo "$p" | tr / -).json"
	# Survivors, one a line, for whoever writes the next test.
	jq -r --arg p "$p" '.files[] | .file_name as $f | .mutations[] | select(.status=="LIVED")
		| "lived \($p)/\($f):\(.line):\(.column) \(.type)"' "$WORK/out.json" >&2
	jq -r --arg p "$p" '([.files[].mutations[] | select(.status=="TIMED OUT")] | length) as $t
		| [$p, .mutants_killed, .mutants_lived, .mutants_not_covered, $t] | @tsv' "$WORK/out.json" |
		awk -F'\t' '{ k = $2 + $5; e = k + $3 > 0 ? 100 * k / (k + $3) : 0
			printf "%-12s %7d %6d %12d %10d %8.1f%%\n", $1, $2, $3, $4, $5, e }' >>"$WORK/table"
done
mkdir -p "$(dirname "$OUT")"
cp "$WORK/table" "$OUT"
cat "$OUT"
