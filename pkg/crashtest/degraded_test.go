package crashtest

import (
	"fmt"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestDegradedCrash replays every write prefix of workloads run on sets
// that lost a member: degraded commits are as crash-safe as whole ones.
func TestDegradedCrash(t *testing.T) {
	for _, cfg := range []Config{
		{Seed: 11, Devices: 2, Data: format.ProfileRaid1, Meta: format.ProfileRaid1},
		{Seed: 12, Devices: 3, Data: format.ProfileRaid1C3, Meta: format.ProfileRaid1C3},
		{Seed: 13, Devices: 4, Data: format.ProfileRaid10, Meta: format.ProfileRaid1},
	} {
		cfg.Ops, cfg.BatchNodes, cfg.Stride, cfg.Reordered, cfg.DevSize = 100, 16, 1, 200, 512<<20
		t.Run(fmt.Sprintf("%d-%v-%v", cfg.Devices, cfg.Data, cfg.Meta), func(t *testing.T) {
			res, err := RunDegraded(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Generations < 5 || res.Points < 100 {
				t.Fatalf("only %d commits, %d crash points: too few to test", res.Generations, res.Points)
			}
			t.Logf("%d crash points, %d generations, %d writes", res.Points, res.Generations, res.Writes)
		})
	}
}

// TestDegradedReplaceCrash replays a crash at every write of a degraded
// replace (issue 36): raid1c3 minus two (device 3's stripes stay
// missing), raid10 minus one; each state opens degraded with the
// committed tree and checks clean but for the missing members.
func TestDegradedReplaceCrash(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		lost int
	}{
		{Config{Seed: 21, Devices: 3, Data: format.ProfileRaid1C3, Meta: format.ProfileRaid1C3}, 2},
		{Config{Seed: 22, Devices: 4, Data: format.ProfileRaid10, Meta: format.ProfileRaid10}, 1},
	} {
		cfg := tc.cfg
		cfg.Ops, cfg.BatchNodes, cfg.Stride, cfg.Reordered, cfg.DevSize = 80, 24, 1, 60, 192<<20
		t.Run(fmt.Sprintf("%v-minus-%d", cfg.Data, tc.lost), func(t *testing.T) {
			res, err := RunDegradedReplace(cfg, tc.lost)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d crash points, %d commits, %d writes", res.Points, res.Commits, res.Writes)
			if res.Commits < 2 || res.Points < res.Writes {
				t.Fatalf("%d commits, %d points for %d writes: too little tested", res.Commits, res.Points, res.Writes)
			}
		})
	}
}
