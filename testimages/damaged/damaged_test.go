// Package damaged holds the damaged-image corpus: for every kind of
// damage in corpus.Kinds, gzip-compressed images and a golden file with
// the problem codes fsck finds before repair, after -p and after -y.
package damaged

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/volume"
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

// where is a problem without its message (counts in messages change as
// fixes go in).
func where(p check.Problem) string {
	c := -1
	if p.Copy != nil {
		c = *p.Copy
	}
	return fmt.Sprintf("%s/%s/%d/%d/%d/%d/%d", p.Code, p.Tree, p.Ino, p.Logical, p.DevID, p.Offset, c)
}

// problemSet: the errors of a check; superblock copies behind are the
// crash window of every commit (the crash harness allows them too).
func problemSet(devs []*device.MemDevice) (map[string]bool, error) {
	rep, err := corpus.Run(devs, check.ModeCheck)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, p := range rep.Problems {
		if p.Pass != check.PassSuper {
			out[where(p)] = true
		}
	}
	if rep.Withheld > 0 || len(rep.Incomplete) > 0 {
		out[withheldKey] = true
	}
	return out, nil
}

// withheldKey marks a check over an incomplete tree: its cross-check
// conclusions were withheld, so a state that completes the tree (a
// rebuild) may show them without being worse.
const withheldKey = "withheld"

// newProblem reports whether w, a problem of a later state, is one the
// damaged image's check did not have, nor withheld.
func newProblem(before map[string]bool, w string) bool {
	code, _, _ := strings.Cut(w, "/")
	return !before[w] && !(before[withheldKey] && check.Code(code).CrossCheck())
}

// TestCorpusRepairCrash replays the -y repair of every corpus image up to
// every flush (each a state a crash can leave): every state opens and has
// no problem the damaged image did not have.
func TestCorpusRepairCrash(t *testing.T) {
	goldens, _ := filepath.Glob("*.golden")
	for _, g := range goldens {
		name := strings.TrimSuffix(g, ".golden")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			devs, err := corpus.ReadImages(".", name)
			if err != nil {
				t.Fatal(err)
			}
			before, err := problemSet(devs)
			if err != nil {
				t.Fatal(err)
			}
			log := device.NewLog()
			work := make([]*device.MemDevice, len(devs))
			for i, d := range devs {
				work[i] = d.Snapshot()
			}
			_, err = check.Repair(func() (*volume.Volume, error) {
				var ds []device.Device
				for i, d := range work {
					ds = append(ds, log.Wrap(d, i))
				}
				return volume.FromDevices(ds, true)
			}, check.Options{Mode: check.ModeRepair, CheckData: true})
			if err != nil {
				t.Fatal(err)
			}
			ops := log.Ops()
			for _, upto := range append(device.FlushPoints(ops), len(ops)) {
				state := make([]*device.MemDevice, len(devs))
				for i, d := range devs {
					state[i] = d.Snapshot()
				}
				if err := device.Replay(ops, upto, state); err != nil {
					t.Fatal(err)
				}
				got, err := problemSet(state)
				if err != nil {
					t.Fatalf("crash after op %d of %d: %v", upto, len(ops), err)
				}
				var worse []string
				for w := range got {
					if newProblem(before, w) {
						worse = append(worse, w)
					}
				}
				if len(worse) > 0 {
					sort.Strings(worse)
					t.Fatalf("crash after op %d of %d: problems the damage did not have: %v", upto, len(ops), worse)
				}
			}
		})
	}
}
