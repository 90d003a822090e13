package crashtest

import (
	"fmt"
	"testing"
)

// TestCrashSetUUID replays a crash at every write of `ddfs set-uuid`, and
// lossy crashes, on every profile of the matrix.
func TestCrashSetUUID(t *testing.T) {
	total := 0
	for i, base := range matrix {
		cfg := base
		cfg.Seed, cfg.Ops, cfg.BatchNodes, cfg.Reordered, cfg.DevSize = 7+uint64(i)*100, 60, 24, 150, 192<<20
		t.Run(fmt.Sprintf("%d-%v-%v", cfg.Devices, cfg.Data, cfg.Meta), func(t *testing.T) {
			res, err := RunSetUUID(cfg, [16]byte{0x5e, 0x70, byte(i), 0xd1})
			if err != nil {
				t.Fatal(err)
			}
			if res.Writes < 20 {
				t.Fatalf("the change made only %d writes: too few to test", res.Writes)
			}
			total += res.Points
			t.Logf("%d crash points, %d writes", res.Points, res.Writes)
		})
	}
	if total < 1000 {
		t.Fatalf("%d crash points, want at least 1,000", total)
	}
}
