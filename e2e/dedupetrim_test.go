package e2e

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runFree is what dedupe-tool run --json says of the space it freed.
type runFree struct {
	Freed     int64    `json:"freed_bytes"`
	Untrimmed *int64   `json:"untrimmed_bytes"`
	Trimmed   *int64   `json:"trimmed_bytes"`
	Disagree  []string `json:"disagree"`
}

func runFreeJSON(t *testing.T, r result) runFree {
	t.Helper()
	var v runFree
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Untrimmed == nil {
		t.Fatalf("run --json: %v\n%s", err, r.stdout)
	}
	return v
}

// TestDedupeToolRunTrim (issue 37): a run's freed space stays allocated
// in the image file, and the run says so (how much, and trimtool or
// --trim to give it back; -q silences it); --trim gives it back, the
// image checks clean and every file reads back the same.
func TestDedupeToolRunTrim(t *testing.T) {
	dir := t.TempDir()
	x := make([]byte, 8<<20)
	rng := rand.New(rand.NewPCG(37, 37))
	for i := range x {
		x[i] = byte(rng.Uint32())
	}
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	names := []string{"a", "b", "c", "d", "e"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, "src", n), x, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-r", "src", "t.img"), 0)
	img := filepath.Join(dir, "t.img")
	before := allocated(t, img)
	r := must(t, run(t, dir, "dedupe-tool", "run", "t.img"), 0)
	if !strings.Contains(r.stderr, "dedupe-tool: run: t.img: freed 32.00MiB; ") ||
		!strings.Contains(r.stderr, "of free space is still allocated in the image; give it back: trimtool t.img (or dedupe-tool run --trim)") {
		t.Fatalf("no hint to trim after a run that freed 32 MiB:\n%s%s", r.stdout, r.stderr)
	}
	ran := allocated(t, img)
	if ran < before {
		t.Fatalf("allocated %d -> %d by a run without --trim", before, ran)
	}
	if r := must(t, run(t, dir, "dedupe-tool", "run", "-q", "t.img"), 0); r.stderr != "" {
		t.Fatalf("-q: %q", r.stderr)
	}
	v := runFreeJSON(t, must(t, run(t, dir, "dedupe-tool", "run", "--json", "t.img"), 0))
	if *v.Untrimmed < 31<<20 || v.Trimmed != nil {
		t.Fatalf("after freeing 32 MiB: %+v", v)
	}
	v = runFreeJSON(t, must(t, run(t, dir, "dedupe-tool", "run", "--trim", "--json", "t.img"), 0))
	if v.Trimmed == nil || *v.Trimmed < 31<<20 || *v.Untrimmed >= 1<<20 {
		t.Fatalf("--trim: %+v", v)
	}
	if dropped := ran - allocated(t, img); dropped < 31<<20 {
		t.Fatalf("--trim: allocated %d -> %d, want 31 MiB less", ran, allocated(t, img))
	}
	must(t, run(t, dir, "fsck.ddfs", "-n", "--check-data", "t.img"), 0)
	for _, n := range names {
		if got := must(t, run(t, dir, "ddfs", "cat", "t.img:/"+n), 0).stdout; got != string(x) {
			t.Fatalf("%s differs after run --trim", n)
		}
	}
}

// TestDedupeToolRunTrimRefuses: where the extent tree calls referenced
// space free, run --trim keeps the run, trims only what both call free
// and refuses the rest as trimtool does: the same lines, exit 4.
func TestDedupeToolRunTrimRefuses(t *testing.T) {
	dir := t.TempDir()
	gunzipTo(t, filepath.Join("..", "testimages", "damaged", "extent-item-deleted.1.img.gz"), filepath.Join(dir, "d.img"))
	want := must(t, run(t, dir, "trimtool", "--dry-run", "d.img"), 4).stderr
	want = strings.ReplaceAll(want, "trimtool: ", "dedupe-tool: run: ")
	// Its root holds the file whose extent item is gone, which run refuses.
	r := must(t, run(t, dir, "dedupe-tool", "run", "--trim", "--json", "d.img:/dir"), 4)
	if r.stderr != want {
		t.Fatalf("stderr:\n%s\nwant trimtool's:\n%s", r.stderr, want)
	}
	if v := runFreeJSON(t, r); len(v.Disagree) == 0 || v.Trimmed == nil {
		t.Fatalf("refused --trim: %+v", v)
	}
}
