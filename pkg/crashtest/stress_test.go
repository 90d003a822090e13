package crashtest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStress runs fresh seeds until DDFS_STRESS_BUDGET (e.g. 10m) ends
// (make stress). A failing case is saved under testdata/ as a seed file
// that TestRegressions replays from then on.
func TestStress(t *testing.T) {
	budget, err := time.ParseDuration(os.Getenv("DDFS_STRESS_BUDGET"))
	if err != nil || budget <= 0 {
		t.Skip("set DDFS_STRESS_BUDGET (make stress)")
	}
	deadline := time.Now().Add(budget)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5))
	points, runs := 0, 0
	for time.Now().Before(deadline) {
		cfg := matrix[r.IntN(len(matrix))]
		cfg.Seed, cfg.Ops, cfg.BatchNodes, cfg.Stride, cfg.Reordered, cfg.DevSize = r.Uint64(), 100+r.IntN(300), 8+r.IntN(64), 1, 200, 256<<20
		var res Result
		var err error
		if r.IntN(3) == 0 {
			kind := FaultKinds[r.IntN(len(FaultKinds))]
			dev, after := r.IntN(cfg.Devices), r.IntN(200)
			if _, err = RunFault(cfg, kind, dev, after); err != nil {
				save(t, seedFile{Config: cfg, Fault: kind, Dev: dev, After: after}, err)
			}
		} else if res, err = Run(cfg); err != nil {
			save(t, seedFile{Config: cfg}, err)
		}
		points += res.Points
		runs++
	}
	t.Logf("%d runs, %d crash points", runs, points)
}

// seedFile is a reproducible failing case.
type seedFile struct {
	Config Config
	Fault  string `json:",omitempty"`
	Dev    int    `json:",omitempty"`
	After  int    `json:",omitempty"`
	Error  string
}

func save(t *testing.T, s seedFile, err error) {
	s.Error = err.Error()
	b, _ := json.MarshalIndent(s, "", "  ")
	p := filepath.Join("testdata", fmt.Sprintf("seed-%d.json", s.Config.Seed))
	os.MkdirAll("testdata", 0o755)
	os.WriteFile(p, b, 0o644)
	t.Errorf("%v (saved as %s)", err, p)
}

// TestRegressions replays every saved failing case.
func TestRegressions(t *testing.T) {
	files, _ := filepath.Glob("testdata/seed-*.json")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var s seedFile
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		t.Run(filepath.Base(p), func(t *testing.T) {
			if s.Fault != "" {
				_, err = RunFault(s.Config, s.Fault, s.Dev, s.After)
			} else {
				_, err = Run(s.Config)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
