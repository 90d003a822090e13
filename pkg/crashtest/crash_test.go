package crashtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// matrix is the profiles and device counts every crash test covers.
var matrix = []Config{
	{Devices: 1, Data: format.ProfileSingle, Meta: format.ProfileDup},
	{Devices: 1, Data: format.ProfileDup, Meta: format.ProfileSingle},
	// Online discard zeroes what it discards on these memory devices, so a
	// discard of live or not-yet-durable space shows up as damage.
	{Devices: 2, Data: format.ProfileRaid1, Meta: format.ProfileRaid1,
		Settings: format.Settings{Discard: format.DiscardAsync, DiscardMetadataMin: 16 << 10}},
	{Devices: 3, Data: format.ProfileRaid0, Meta: format.ProfileRaid1C3},
	{Devices: 4, Data: format.ProfileRaid10, Meta: format.ProfileRaid10,
		Settings: format.Settings{Discard: format.DiscardSync}},
	{Devices: 2, Data: format.ProfileSingle, Meta: format.ProfileRaid1,
		Settings: format.Settings{Dedupe: true, DedupeBlockLog2: 12, Compression: format.CompressZstd, CompressionLevel: 3,
			Discard: format.DiscardAsync, DiscardMaxPerCommit: 64 << 10}},
	// Strong tails: commits add them to xxh3 entries while the (slow)
	// flushes run; each state's fsck recomputes them from the data.
	{Devices: 2, Data: format.ProfileRaid1, Meta: format.ProfileRaid1, Tails: true,
		Settings: format.Settings{Dedupe: true, DedupeBlockLog2: 12, DedupeHash: format.CsumXXH3}},
}

// TestCrashMatrix replays well over 10,000 crash points across the matrix.
func TestCrashMatrix(t *testing.T) {
	total := 0
	for i, base := range matrix {
		for seed := uint64(1); seed <= 3; seed++ {
			cfg := base
			cfg.Seed, cfg.Ops, cfg.BatchNodes, cfg.Stride, cfg.Reordered, cfg.DevSize = seed+uint64(i)*100, 150, 24, 1, 300, 192<<20
			t.Run(fmt.Sprintf("%d-%v-%v-seed%d", cfg.Devices, cfg.Data, cfg.Meta, cfg.Seed), func(t *testing.T) {
				res, err := Run(cfg)
				if err != nil {
					t.Fatal(err)
				}
				if res.Generations < 10 || res.Succeeded < cfg.Ops/3 {
					t.Fatalf("%d commits, %d of %d operations succeeded: too few to test", res.Generations, res.Succeeded, cfg.Ops)
				}
				if cfg.Tails && res.Tails == 0 {
					t.Fatal("no strong tail made: the tails row tests nothing")
				}
				total += res.Points
				t.Logf("%d crash points, %d generations, %d writes, %d operations succeeded, %d strong tails", res.Points, res.Generations, res.Writes, res.Succeeded, res.Tails)
			})
		}
	}
	if total < 10000 {
		t.Fatalf("%d crash points, want at least 10,000", total)
	}
	t.Logf("total: %d crash points", total)
}

// TestCrashModelSeesMissingFlush: a commit that flushes only the first
// device (the others' flushes do nothing) must fail the crash matrix. A
// model where a flush of any device counts as a flush of all passed it.
func TestCrashModelSeesMissingFlush(t *testing.T) {
	caught := 0
	for i, base := range matrix {
		if base.Devices < 2 {
			continue
		}
		cfg := base
		cfg.Seed, cfg.Ops, cfg.BatchNodes, cfg.Stride, cfg.Reordered, cfg.DevSize = 7+uint64(i), 60, 24, 5, 100, 192<<20
		cfg.dropFlush = func(dev int) bool { return dev > 0 }
		if _, err := Run(cfg); err != nil {
			caught++
			t.Logf("%v: caught: %v", cfg, firstLine(err))
		} else {
			t.Errorf("%v: flushing only device 0 passed the crash test", cfg)
		}
	}
	if caught == 0 {
		t.Fatal("no multi-device configuration in the matrix")
	}
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
