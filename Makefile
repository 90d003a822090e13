# ddfs — see README.md. `make` builds the five tools into bin/.
GO      ?= go
SCALE   ?= small
BIN     := bin
TOOLS   := mkfs.ddfs fsck.ddfs ddfs dedupe-tool trimtool
# Executions of each fuzz target inside `make test` (a count, not a duration: a
# time budget can end with a spurious "context deadline exceeded" on a busy machine).
FUZZTIME ?= 100000x
# Counts for targets whose executions are slow (TARGET=COUNT), to keep make test short.
FUZZCOUNTS ?= FuzzTreeOps=10000x FuzzImage=200x FuzzDecompress=20000x FuzzTarIn=3000x FuzzExt4=20000x FuzzSquashfs=20000x FuzzISO9660=20000x FuzzFAT=20000x FuzzReceive=3000x FuzzFatFix=3000x

.PHONY: all build test test-unit fuzz fuzz-list race bench demo testimages damaged clean vet stress mutants man test-fuse-suites test-fuse-ci

# Crash/fault stress until the budget ends; failing seeds land in
# pkg/crashtest/testdata/ and are replayed by make test from then on.
STRESS_BUDGET ?= 10m

all: build

# Static binaries (no cgo: only os/user and net, pulled in by archive/tar
# and google/uuid, wanted it): fsck.ddfs runs from an initramfs or a rescue
# system without libc, and each tool maps no libc or loader (1.5 MB less
# peak RSS for dedupe-tool run on the bench set).
build: export CGO_ENABLED := 0
build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/mkfs.ddfs ./mkfs
	$(GO) build -o $(BIN)/fsck.ddfs ./fsck
	$(GO) build -o $(BIN)/ddfs ./ddfs
	$(GO) build -o $(BIN)/dedupe-tool ./dedupe-tool
	$(GO) build -o $(BIN)/trimtool ./trimtool

vet:
	$(GO) vet ./...

# Every test: unit, property, golden, end-to-end (built binaries), and a
# short run of each fuzz target. Expensive invariant checks are on (tag ddfs_invariants).
# .ci/testreport.go prints what go test prints, then each skipped test and
# why; under CI=true a skip not in .ci/skips-allowed fails the run
# (pipefail: a failed test fails it as before). The timeout guards against
# a hang only: e2e took 31 min of a 2-core machine at load 30 (stress-ng
# plus six test runs), so 30m failed a healthy run.
test: SHELL := /bin/bash
test: build vet
	set -o pipefail; $(GO) test -json -tags ddfs_invariants -count=1 -timeout 60m ./... | $(GO) run .ci/testreport.go
	$(MAKE) race
	$(MAKE) fuzz

# The concurrent paths (background data writer, read-ahead, scrub workers, the FUSE server) under the race detector.
race:
	$(GO) test -race -count=1 -run 'TestWriteWhileChunksGrow|TestCompressionRoundTrip' ./pkg/fsys/
	$(GO) test -race -count=1 -run 'TestDedupeSharesAndSurvives|TestStrongTails$$' ./pkg/inband/
	$(GO) test -race -count=1 -run 'TestReviewFixes|TestSmallSparseFile' ./pkg/transfer/
	$(GO) test -race -count=1 -run 'TestScrubResume|TestScrubIOErrors' ./pkg/scrub/
	$(GO) test -race -count=1 -run 'TestConcurrentOps' ./pkg/fusefs/
	$(GO) test -race -count=1 -run 'TestAheadWriter|TestIncrementalChain' ./pkg/send/

# The fuzz targets of the module's own packages, "PACKAGE TARGET" a line:
# go list names the packages and their test files (not a grep of the tree,
# which found copies such as demo/_out-pkg), go test -list the targets of
# those whose test files define one.
FUZZ_LIST = pkgs=$$($(GO) list -f '{{.ImportPath}}{{range .TestGoFiles}} {{$$.Dir}}/{{.}}{{end}}{{range .XTestGoFiles}} {{$$.Dir}}/{{.}}{{end}}' ./...) || exit 1; \
	printf '%s\n' "$$pkgs" | while read -r pkg files; do \
		[ -n "$$files" ] && grep -q '^func Fuzz' $$files || continue; \
		out=$$($(GO) test -list '^Fuzz' $$pkg) || { printf '%s\n' "$$out" >&2; exit 1; }; \
		printf '%s\n' "$$out" | sed -n "s|^\(Fuzz.*\)|$$pkg \1|p"; \
	done

fuzz-list:
	@$(FUZZ_LIST)

# Every fuzz target (fuzz-list), each with its count from FUZZCOUNTS or
# FUZZTIME. Each starts from its seeds (f.Add, testdata/fuzz), not from
# the corpus earlier runs cached: replaying a cache that grows with every
# run would make make test slower each time.
fuzz:
	@cache=$$($(GO) env GOCACHE)/fuzz; \
	list=$$($(FUZZ_LIST)) && [ -n "$$list" ] || { echo "fuzz: no fuzz targets found" >&2; exit 1; }; \
	printf '%s\n' "$$list" | while read -r pkg t; do \
		n=$(FUZZTIME); for c in $(FUZZCOUNTS); do [ "$${c%%=*}" = "$$t" ] && n=$${c#*=}; done; \
		rm -rf "$$cache/$$pkg/$$t"; \
		echo "fuzz $$pkg $$t ($$n)"; \
		$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $$n -fuzzminimizetime=0 $$pkg || exit 1; \
	done

# Foreign suites on a FUSE mount (ddfs mount), not in make test: go test of
# os, path/filepath, io/fs, archive/tar with TMPDIR on the mount, stress-ng
# --verify stressors, fio verify jobs, dbench (Debian packages stress-ng,
# fio, dbench, fuse3), the Go tree untarred and go vet ./... of this module
# with GOROOT on the mount, and fsx at FSX_OPS steps; fsck clean after each.
# test-fuse-suites is the full size (~30 min: its go vet compiles into a GOCACHE on
# the mount, 11 min alone at load 12 on 2 cores); test-fuse-ci, run by .ci/run
# after make test, the same suites shorter (~4 min; make test runs TestFSX).
FSX_OPS ?= 100000
FUSE_SUITES := TestStdlibOnMount|TestStressNGOnMount|TestFioOnMount|TestBuildOnMount|TestDbenchOnMount
test-fuse-suites: build
	DDFS_FUSE_SUITES=full DDFS_FSX_OPS=$(FSX_OPS) $(GO) test -count=1 -timeout 0 -v -run '$(FUSE_SUITES)|TestFSX' ./e2e/

test-fuse-ci: build
	DDFS_FUSE_SUITES=ci $(GO) test -count=1 -timeout 20m -v -run '$(FUSE_SUITES)' ./e2e/

stress: build
	DDFS_STRESS_BUDGET=$(STRESS_BUDGET) DDFS_STRESS=1 $(GO) test -count=1 -timeout 0 -run 'TestStress|TestHammer' -v ./pkg/crashtest/ ./e2e/
	# The damage campaign at full size: 64 fields of every item changed too
	# (what fsck -y leaves of field changes is logged), the writing tools'
	# (TestCampaign) and rescue's (TestRescueCampaign).
	DDFS_CAMPAIGN_FIELDS=64 $(GO) test -count=1 -timeout 0 -run '^Test(Rescue)?Campaign$$' -v ./testimages/damaged/
	# Kill -9 and power cuts at every flush of fsck -y and of trim on every
	# variant of the campaign, 4 fields of every item changed too (fields=0: 7 min on a loaded 2-core machine).
	DDFS_KILLFLUSH_FIELDS=4 DDFS_KILLFLUSH_ALL=1 $(GO) test -count=1 -timeout 0 -run TestKillAtFlush ./testimages/damaged/

bench: build
	BIN=$(BIN) bench/run.sh
	BIN=$(BIN) bench/dedupe.sh
	BIN=$(BIN) bench/tiered.sh
	BIN=$(BIN) bench/tiered-loop.sh
	BIN=$(BIN) bench/discard.sh
	BIN=$(BIN) bench/trimcheck.sh
	BIN=$(BIN) bench/scrub.sh
	BIN=$(BIN) bench/parity.sh
	BIN=$(BIN) bench/devremove.sh
	BIN=$(BIN) bench/fsck.sh
	BIN=$(BIN) bench/send.sh
	SET=d2 BIN=$(BIN) bench/send.sh
	SCALE=$(SCALE) BIN=$(BIN) bench/snapshot.sh
	BIN=$(BIN) bench/snapwa.sh
	BIN=$(BIN) bench/batch.sh
	SCALE=$(SCALE) BIN=$(BIN) bench/scale.sh
	SCALE=$(SCALE) BIN=$(BIN) bench/buildtar.sh
	BIN=$(BIN) bench/nbd.sh
	BIN=$(BIN) bench/dedupe-tool.sh
	BIN=$(BIN) bench/fuse.sh
	BIN=$(BIN) bench/foreign.sh

# The main job on built-in sample data: a four-device set (2 "SSDs", 2 "HDDs")
# with dedupe and compression, filled from this repository's own source,
# listed, read back, copied out and compared, inspected and checked.
demo: build
	@rm -rf demo && mkdir -p demo
	$(BIN)/mkfs.ddfs -L demo -b 1G -d raid0 -m raid1 --alloc-policy ssd-metadata --dedupe --compress zstd:3 \
		demo/ssd0.img demo/ssd1.img \
		demo/hdd0.img:rotational=1,seek_speed=120,bandwidth=150M demo/hdd1.img:rotational=1
	$(BIN)/ddfs cp -r format pkg demo/ssd0.img:/
	$(BIN)/ddfs cp -r pkg demo/ssd0.img:/pkg-again
	$(BIN)/ddfs ls -l demo/ssd0.img:/format
	$(BIN)/ddfs cat demo/ssd0.img:/format/doc.go | head -5
	$(BIN)/ddfs cp -a demo/ssd0.img:/pkg demo/_out-pkg && diff -r pkg demo/_out-pkg && echo "copied out: identical"
	$(BIN)/ddfs info demo/ssd0.img
	$(BIN)/ddfs df demo/hdd1.img
	$(BIN)/dedupe-tool status demo/ssd1.img
	$(BIN)/fsck.ddfs --check-data demo/hdd1.img
	@du -h demo/*.img

# Man pages (section 8) of the five tools, one per command, from the same
# text as --help (cobra/doc); checked in under man/, kept current by
# e2e TestManPagesCurrent. The page writer is built in only with -tags
# ddfs_man (the tools themselves go without its libraries' memory).
man:
	@rm -rf man $(BIN)/man-tools && mkdir -p man $(BIN)/man-tools
	@for tp in mkfs.ddfs:mkfs fsck.ddfs:fsck ddfs:ddfs dedupe-tool:dedupe-tool trimtool:trimtool; do \
		$(GO) build -tags ddfs_man -o $(BIN)/man-tools/$${tp%%:*} ./$${tp#*:} && \
		DDFS_GEN_MAN=man $(BIN)/man-tools/$${tp%%:*} || exit 1; done
	@rm -rf $(BIN)/man-tools
	@ls man | wc -l | sed 's/$$/ man pages in man\//'

# Mutation testing (gremlins) of the core packages; the table goes to
# bench/results/mutants.txt. Slow (one go test per mutant): not part of make test.
mutants:
	bench/mutants.sh

# Rebuild the frozen images under testimages/ (only when the format gains a version).
testimages: build
	$(GO) run ./testimages/gen

# Rewrite the damaged-image corpus and its golden codes (review the diff).
damaged: build
	$(GO) run ./testimages/damaged/gen

clean:
	rm -rf $(BIN) demo
