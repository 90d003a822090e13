package check

import (
	"fmt"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// A set with one member missing: without Degraded the missing device is
// the one problem reported (and nothing else is checked); with Degraded
// every node is checked on the present copies and still only the
// missing device is reported.
func TestMissingDeviceReported(t *testing.T) {
	for _, l := range []layout{
		{2, format.ProfileRaid1, format.ProfileRaid1},
		{3, format.ProfileRaid1C3, format.ProfileRaid1C3},
		{4, format.ProfileRaid10, format.ProfileRaid10},
	} {
		t.Run(fmt.Sprintf("%d-%v-%v", l.devs, l.data, l.meta), func(t *testing.T) {
			devs := build(t, l, 600)
			full := checkDevs(t, devs)
			for _, degraded := range []bool{false, true} {
				rep, err := CheckVolume(volumeOf(t, devs[:l.devs-1]), Options{Degraded: degraded, CheckData: true})
				if err != nil {
					t.Fatal(err)
				}
				if len(rep.Problems) != 1 || rep.Problems[0].Code != DevMissing || rep.Problems[0].DevID != uint64(l.devs) || rep.Clean() {
					t.Fatalf("degraded %v: problems %v, want only devid %d missing", degraded, rep.Problems, l.devs)
				}
				if checked := rep.Nodes == full.Nodes; checked != degraded {
					t.Fatalf("degraded %v: %d of %d nodes checked", degraded, rep.Nodes, full.Nodes)
				}
			}
		})
	}
}
