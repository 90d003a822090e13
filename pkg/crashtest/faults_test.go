package crashtest

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestFaults injects every fault kind at many points into workloads on
// every layout of the matrix: the workload fails with the injected error
// (or finishes, if the fault never hits), and after a power cut the set
// opens clean without losing a committed generation.
func TestFaults(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 42))
	points, failed := 0, 0
	for _, base := range matrix {
		for _, kind := range FaultKinds {
			for trial := 0; trial < 6; trial++ {
				cfg := base
				cfg.Seed, cfg.Ops, cfg.BatchNodes, cfg.DevSize = r.Uint64()%1000, 120, 24, 192<<20
				// Faults land within the workload's operation counts.
				after := r.IntN(map[string]int{FaultFlush: 25, FaultReadEIO: 15}[kind] + 1)
				if kind != FaultFlush && kind != FaultReadEIO {
					after = r.IntN(150)
				}
				dev := r.IntN(cfg.Devices)
				t.Run(fmt.Sprintf("%d-%v-%v/%s/after%d-dev%d", cfg.Devices, cfg.Data, cfg.Meta, kind, after, dev), func(t *testing.T) {
					res, err := RunFault(cfg, kind, dev, after)
					if err != nil {
						t.Fatal(err)
					}
					points++
					if res.Failed {
						failed++
					}
				})
			}
		}
	}
	if failed < points/3 {
		t.Fatalf("only %d of %d fault runs hit their fault: the test is too weak", failed, points)
	}
	t.Logf("%d fault points, %d hit the workload", points, failed)
}
