package e2e

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/ddfs/ddfs/"

// layers ranks every package: a package may import only packages of a
// strictly lower rank, so imports point one way (format <- pkg <- mains).
// A new package fails this test until it is given a rank here.
var layers = map[string]int{
	"format":    0,
	"pkg/units": 1, "pkg/cdc": 1, "pkg/device": 1, "pkg/attrspec": 1, "pkg/device/nbdkittest": 1,
	"pkg/alloc": 1, "pkg/btree": 1, "pkg/codec": 1,
	"pkg/parity":   1, // raid5/raid6 parity strips (reedsolomon with the md raid6 matrix)
	"pkg/zeros":    0, // zero-byte runs: holes, discards, write-zeroes
	"pkg/progress": 2, "pkg/volume": 2,
	"pkg/cli":     2, // names remote devices in error lines (device.RemoteError)
	"pkg/foreign": 2, // other filesystems' images, read-only through go-diskfs: on device (and format's magic)
	"pkg/batch":   3, // operands into sets, jobs, shards: on cli, volume
	"pkg/store":   3,
	"pkg/inband":  4, // the inband dedupe index: on store, below the fs that calls it
	"pkg/inuse":   4, // what every tree references, against a free list: on store
	"pkg/rescue":  4, // salvage to a host folder: on store, read-only
	"pkg/scrub":   4,
	"pkg/fsys":    5, "pkg/inspect": 5,
	"pkg/trim":     6, // discards only what pkg/inuse agrees is free
	"pkg/transfer": 6, "pkg/check": 6, "pkg/send": 6,
	"pkg/dedupe": 6, // estimate, offline dedupe, index upkeep: on fsys
	"pkg/mkfs":   7, "pkg/crashtest": 7, "pkg/export": 7,
	"pkg/fusefs": 7, // the FUSE mount: on fsys
	// The five mains and the tools around them.
	"mkfs": 10, "fsck": 10, "ddfs": 10, "dedupe-tool": 10, "trimtool": 10,
	"bench/gen": 10, "bench/dedupegen": 10, "bench/fragment": 10,
	"bench/postmark": 10, "bench/plot": 10, "bench/randwrite": 10, "bench/fsckdamage": 10,
	"testimages/gen": 10, "testimages": 10, "e2e": 10,
	"testimages/damaged/corpus": 8, "testimages/damaged": 10, "testimages/damaged/gen": 10,
}

// importsOf lists each package of the module with its module imports
// (tests excluded: a test may reach across layers to build fixtures).
func importsOf(t *testing.T) map[string][]string {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		name := strings.TrimPrefix(f[0], module)
		pkgs[name] = nil
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				pkgs[name] = append(pkgs[name], strings.TrimPrefix(imp, module))
			}
		}
	}
	return pkgs
}

func TestImportDirection(t *testing.T) {
	pkgs := importsOf(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: is it run from the module?", len(pkgs))
	}
	for p, imps := range pkgs {
		rank, ok := layers[p]
		if !ok {
			t.Errorf("package %s has no layer: give it a rank in layering_test.go", p)
			continue
		}
		for _, imp := range imps {
			if r, ok := layers[imp]; ok && r >= rank {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports must point down", p, rank, imp, r)
			}
		}
	}
}

// TestToolsWithoutManWriter: the five tools as built link no man page
// writer (cobra/doc and its markdown libraries made 0.5 MiB of heap at
// every start: dedupe-tool run's peak RSS was 1.7 MB higher); `make man`
// builds them with -tags ddfs_man.
func TestToolsWithoutManWriter(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../mkfs", "../fsck", "../ddfs", "../dedupe-tool", "../trimtool").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/spf13/cobra/doc" || strings.Contains(p, "md2man") || strings.Contains(p, "blackfriday") {
			t.Errorf("the tools link %s", p)
		}
	}
	out, err = exec.Command("go", "list", "-deps", "-tags", "ddfs_man", "../ddfs").Output()
	if err != nil || !strings.Contains(string(out), "github.com/spf13/cobra/doc\n") {
		t.Errorf("-tags ddfs_man: no man page writer in ddfs (%v)", err)
	}
}

// TestInspectOnlyForCommands: pkg/inspect is the commands' reporting
// package (docs/ARCHITECTURE.md): no package under pkg/ imports it, so
// the core owns its data (volume.DeviceIO, dedupe.GetStatus) and the
// reporting depends on it, never the reverse.
func TestInspectOnlyForCommands(t *testing.T) {
	for p, imps := range importsOf(t) {
		for _, imp := range imps {
			if imp == "pkg/inspect" && strings.HasPrefix(p, "pkg/") {
				t.Errorf("%s imports pkg/inspect: only the commands may", p)
			}
		}
	}
}

// TestDedupeIndexInOnePackage: the dedupe tree, its entries and the
// extents' deduped mark are pkg/inband's (docs/ARCHITECTURE.md): the
// filesystem's files call its interface and name none of them.
func TestDedupeIndexInOnePackage(t *testing.T) {
	names := regexp.MustCompile(`format\.(DedupeTree|DedupeItem\w*|MarshalDedupeItem|UnmarshalDedupeItem|DedupeHashPrefix|ExtentFlagDeduped|StrongDedupeHash|RebuildDedupeItem)\b`)
	files, err := filepath.Glob("../pkg/fsys/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no pkg/fsys sources: %v", err)
	}
	for _, p := range files {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := names.Find(b); m != nil {
			t.Errorf("%s names %s: the dedupe index is pkg/inband's", p, m)
		}
	}
}

// TestArchitectureLayers holds docs/ARCHITECTURE.md's layer table to the
// ranks above: every format/pkg package is in the row of its rank.
func TestArchitectureLayers(t *testing.T) {
	doc, err := os.ReadFile("../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| (\\d+) \\| (.*?) \\|")
	name := regexp.MustCompile("`([a-z/]+)/?`")
	inDoc := map[string]int{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		rank, _ := strconv.Atoi(m[1])
		for _, n := range name.FindAllStringSubmatch(m[2], -1) {
			inDoc[n[1]] = rank
		}
	}
	for p, rank := range layers {
		if p != "format" && (!strings.HasPrefix(p, "pkg/") || strings.Count(p, "/") > 1) {
			continue
		}
		if r, ok := inDoc[p]; !ok || r != rank {
			t.Errorf("%s (layer %d) is not in docs/ARCHITECTURE.md's row %d", p, rank, rank)
		}
	}
	if len(inDoc) < 20 {
		t.Fatalf("read %d packages from the layer table", len(inDoc))
	}
}
