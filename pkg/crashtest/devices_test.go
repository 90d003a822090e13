package crashtest

import (
	"fmt"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
)

// TestCrashDeviceOps replays a crash at every write and flush of device
// remove, replace, shrink and balance: each state opens (a removed device
// is either a member or ignored), holds the committed tree and passes fsck.
func TestCrashDeviceOps(t *testing.T) {
	raid1 := func(p format.Profile) *format.Profile { return &p }
	for _, tc := range []struct {
		name    string
		cfg     Config
		spares  int
		op      DeviceOp
		members []int // the device counts crash states must show, each
	}{
		{"remove-raid1", Config{Devices: 3, Data: format.ProfileRaid1, Meta: format.ProfileRaid1}, 0,
			func(st *store.FS, _ []device.Device) error { return st.RemoveDevice(2, nil) }, []int{3, 2}},
		{"remove-single", Config{Devices: 3, Data: format.ProfileSingle, Meta: format.ProfileRaid1}, 0,
			func(st *store.FS, _ []device.Device) error { return st.RemoveDevice(1, nil) }, []int{3, 2}},
		{"replace-raid10", Config{Devices: 4, Data: format.ProfileRaid10, Meta: format.ProfileRaid1}, 1,
			func(st *store.FS, s []device.Device) error {
				_, err := st.ReplaceDevice(3, store.NewDevice{Dev: s[0], Path: "spare0"}, nil)
				return err
			}, []int{4, 5}},
		{"balance-to-raid1", Config{Devices: 2, Data: format.ProfileSingle, Meta: format.ProfileDup}, 0,
			func(st *store.FS, _ []device.Device) error {
				_, err := st.Balance(raid1(format.ProfileRaid1), raid1(format.ProfileRaid1), nil)
				return err
			}, []int{2}},
		{"shrink-dup", Config{Devices: 1, Data: format.ProfileSingle, Meta: format.ProfileDup}, 0,
			func(st *store.FS, _ []device.Device) error { return st.ResizeDevice(1, 112<<20, nil) }, []int{1}},
	} {
		for seed := uint64(7); seed <= 8; seed++ {
			t.Run(fmt.Sprintf("%s-seed%d", tc.name, seed), func(t *testing.T) {
				cfg := tc.cfg
				cfg.Seed, cfg.Ops, cfg.BatchNodes, cfg.Reordered, cfg.DevSize = seed, 80, 24, 60, 192<<20
				res, err := RunDeviceOp(cfg, tc.spares, tc.op)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%d crash points, %d commits, %d writes, members %v", res.Points, res.Commits, res.Writes, res.Members)
				if res.Commits < 2 || res.Points < res.Writes {
					t.Fatalf("%d commits, %d points for %d writes: too little tested", res.Commits, res.Points, res.Writes)
				}
				if len(res.Generations) < res.Commits {
					t.Fatalf("states show %d generations of %d", len(res.Generations), res.Commits+1)
				}
				if len(res.Members) != len(tc.members) {
					t.Fatalf("states show device counts %v, want each of %v", res.Members, tc.members)
				}
				for _, n := range tc.members {
					if res.Members[n] == 0 {
						t.Fatalf("no state with %d devices (%v)", n, res.Members)
					}
				}
			})
		}
	}
}
