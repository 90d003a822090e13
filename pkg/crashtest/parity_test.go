package crashtest

import (
	"fmt"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestParityWriteHole crashes at every write of partial-stripe workloads
// on raid5 and raid6 and then loses each device (each pair for raid6):
// every committed file reads back identical (issue 40).
func TestParityWriteHole(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		lose int
	}{
		{Config{Seed: 41, Devices: 3, Data: format.ProfileRaid5, Meta: format.ProfileRaid5}, 1},
		{Config{Seed: 42, Devices: 4, Data: format.ProfileRaid6, Meta: format.ProfileRaid6}, 2},
	} {
		cfg := tc.cfg
		cfg.Ops, cfg.BatchNodes, cfg.Stride, cfg.Reordered, cfg.DevSize = 60, 16, 2, 60, 256<<20
		if testing.Short() {
			cfg.Ops, cfg.Stride, cfg.Reordered = 30, 3, 30
		}
		t.Run(fmt.Sprintf("%d-%v", cfg.Devices, cfg.Data), func(t *testing.T) {
			res, err := RunParityLoss(cfg, tc.lose)
			if err != nil {
				t.Fatal(err)
			}
			if res.Generations < 5 || res.Points < 50 {
				t.Fatalf("only %d commits, %d crash points: too few to test", res.Generations, res.Points)
			}
			t.Logf("%d crash points, %d generations, %d writes", res.Points, res.Generations, res.Writes)
		})
	}
}
