// Package damaged holds the damaged-image corpus: for every kind of
// damage in corpus.Kinds, gzip-compressed images and a golden file with
// the problem codes fsck finds before repair, after -p and after -y.
package damaged

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/testimages/damaged/corpus"
)

// TestCorpus checks every frozen damaged image against its golden codes:
// fsck -n, then -p and -y each on a fresh copy. A change in what fsck
// finds or fixes shows up here; rewrite the corpus with go run
// ./testimages/damaged/gen and review the golden diff.
func TestCorpus(t *testing.T) {
	goldens, _ := filepath.Glob("*.golden")
	if len(goldens) < 40 {
		t.Fatalf("%d golden files: the corpus wants at least 40 kinds", len(goldens))
	}
	kinds := map[string]bool{}
	for _, k := range corpus.Kinds {
		kinds[k.Name] = true
	}
	for _, g := range goldens {
		name := strings.TrimSuffix(g, ".golden")
		if !kinds[name] {
			t.Errorf("%s: no such kind in corpus.Kinds (stale file)", g)
		}
		delete(kinds, name)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, err := os.Open(g)
			if err != nil {
				t.Fatal(err)
			}
			want, err := corpus.ParseGolden(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			devs, err := corpus.ReadImages(".", name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := corpus.Measure(devs)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"before", got.Before, want.Before}, {"after -p", got.AfterPreen, want.AfterPreen}, {"after -y", got.AfterRepair, want.AfterRepair}} {
				if strings.Join(c.got, " ") != strings.Join(c.want, " ") {
					t.Errorf("%s: %v, golden %v", c.what, c.got, c.want)
				}
			}
			if len(want.Before) == 0 {
				t.Errorf("the golden finds nothing: the damage missed")
			}
		})
	}
	for k := range kinds {
		t.Errorf("kind %s has no golden file: run go run ./testimages/damaged/gen", k)
	}
}
