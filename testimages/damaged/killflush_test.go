package damaged

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/trim"
	"github.com/ddfs/ddfs/pkg/volume"
	"github.com/ddfs/ddfs/testimages/damaged/corpus"
)

// Kill -9 at every flush of a repair and of a trim leaves the image no
// worse than before (issue 36). Each tool runs on a damaged image of the
// campaign through recording devices; the log is then cut at every flush
// (every write barrier; trim, which writes little, at every operation),
// and every cut must read back each file corpus.Readable read before the
// tool ran. Two states per cut:
//
//	kill   the process died: every write it issued reached the device
//	       (the page cache survives kill -9), flushed or not
//	power  the machine lost power: only what each device had flushed
//
// A finished fsck -y loses no readable file: TestCampaign fails where it
// does, on every variant (field changes too under make stress). Here a
// cut of a repair may still lose what its finished run lost, no other
// file, so that such a loss is reported once, by TestCampaign. A trim is
// held to no loss at all, as TestCampaign holds the finished trim.

// killTool is a writing tool run on devices it is handed (log-wrapped).
type killTool struct {
	name string
	// strict: no cut may lose a file, even one the finished tool loses.
	strict bool
	// everyOp cuts after every operation, not only at flushes.
	everyOp bool
	run     func(devs []device.Device) error
}

var killTools = []killTool{
	{"fsck -y", false, false, func(devs []device.Device) error {
		_, err := check.Repair(func() (*volume.Volume, error) { return volume.FromDevices(devs, true) }, check.Options{Mode: check.ModeRepair, CheckData: true})
		return err
	}},
	{"trim", true, true, killTrim},
}

// killTrim is trimtool on one set: open for writing, trim, and after a
// full run with no disagreement the commit that drops the pending
// discard records, then close.
func killTrim(devs []device.Device) error {
	vol, err := volume.FromDevices(devs, true)
	if err != nil {
		return err
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		vol.Close()
		return err
	}
	_, err = trim.Run(st, trim.Options{})
	if err == nil {
		err = st.ClearDiscardRecords()
	}
	if errors.Is(err, trim.ErrDisagree) {
		err = nil // trimmed what both call free; records stay
	}
	return errors.Join(err, st.Close())
}

// killRecord runs tool on a copy of damaged through a log and returns the
// log and the devices as the finished run left them.
func killRecord(tool killTool, damaged []*device.MemDevice) ([]device.Op, []*device.MemDevice) {
	log := device.NewLog()
	work := corpus.Snapshots(damaged)
	ds := make([]device.Device, len(work))
	for i, d := range work {
		ds[i] = log.Wrap(d, i)
	}
	tool.run(ds) // an error (a refused open) is a run like any other: its writes are in the log
	for _, d := range work {
		d.Flush() // the finished run as a clean exit leaves it
	}
	return log.Ops(), work
}

// killCuts are the prefixes of ops a kill or a power cut can stop at: every
// flush point, or every operation.
func killCuts(ops []device.Op, everyOp bool) []int {
	if everyOp {
		out := make([]int, len(ops)+1)
		for i := range out {
			out[i] = i
		}
		return out
	}
	return append([]int{0}, device.FlushPoints(ops)...)
}

// killCutState replays ops[:upto] onto copies of damaged; kill keeps every
// write issued, power only what each device flushed.
func killCutState(damaged []*device.MemDevice, ops []device.Op, upto int, kill bool) ([]*device.MemDevice, error) {
	devs := corpus.Snapshots(damaged)
	if err := device.Replay(ops, upto, devs); err != nil {
		return nil, err
	}
	if kill {
		for _, d := range devs {
			d.Flush()
		}
	}
	return devs, nil // Readable reads the durable state (a power cut drops the rest)
}

// variantKind is the kind of a variant: make test cuts the first
// variant of each kind that leaves a file readable; DDFS_KILLFLUSH_ALL
// cuts every variant. "delete fs/INODE_ITEM/256/0" → "delete fs/INODE_ITEM",
// "field extent/EXTENT_ITEM/…@8" → "field extent/EXTENT_ITEM", "node
// fs/5246976 all copies" → "node fs", "sysarray 0 stripe 1 devid" →
// "sysarray devid".
func variantKind(name string) string {
	f := strings.Fields(name)
	switch f[0] {
	case "delete", "field":
		p := strings.Split(f[1], "/")
		return f[0] + " " + p[0] + "/" + p[1]
	case "node":
		return "node " + strings.Split(f[1], "/")[0]
	case "sysarray":
		return "sysarray " + strings.Join(f[4:], " ")
	}
	return name
}

// TestKillAtFlush cuts fsck -y and trim at every flush on one variant of
// each kind of the damage campaign (1 and 2 devices); make stress cuts
// every variant (DDFS_KILLFLUSH_ALL=1) with DDFS_KILLFLUSH_FIELDS=N
// fields of each item changed too.
func TestKillAtFlush(t *testing.T) {
	fields := 0
	if s := os.Getenv("DDFS_KILLFLUSH_FIELDS"); s != "" {
		fmt.Sscan(s, &fields)
	}
	for _, ndev := range []int{1, 2} {
		t.Run(fmt.Sprintf("%ddev", ndev), func(t *testing.T) {
			base, err := corpus.Base(ndev)
			if err != nil {
				t.Fatal(err)
			}
			all, err := corpus.Variants(base, fields, 1)
			if err != nil {
				t.Fatal(err)
			}
			everyVariant := os.Getenv("DDFS_KILLFLUSH_ALL") != ""
			kinds := map[string]bool{}
			var vs []string
			states, flushes := map[string]int{}, map[string]int{}
			finishedLoss := map[string]int{}
			for _, v := range all {
				kind := variantKind(v.Name)
				if kinds[kind] && !everyVariant {
					continue
				}
				damaged, err := corpus.Damage(base, v.Damage)
				if err != nil {
					continue // not made (as TestCampaign)
				}
				before := corpus.Readable(damaged)
				if len(before) == 0 && !everyVariant {
					continue // nothing to lose: the next of its kind
				}
				kinds[kind] = true
				vs = append(vs, v.Name)
				for _, tool := range killTools {
					ops, end := killRecord(tool, damaged)
					// What the finished run loses: allowed to a cut of a
					// tool that is not strict (TestCampaign fails on it).
					allowed := map[string]bool{}
					if lost := missing(before, corpus.Readable(end)); len(lost) > 0 {
						finishedLoss[tool.name]++
						if tool.strict {
							t.Errorf("%s: finished %s lost %v", v.Name, tool.name, lost)
						} else {
							for _, p := range lost {
								allowed[p] = true
							}
						}
					}
					flushes[tool.name] += len(device.FlushPoints(ops))
					if testing.Verbose() {
						t.Logf("%s: %s: %d ops, %d flushes, %d files readable before", v.Name, tool.name, len(ops), len(device.FlushPoints(ops)), len(before))
					}
					for _, upto := range killCuts(ops, tool.everyOp) {
						// A power cut between flushes keeps what the last
						// flush kept: cut only at flushes.
						power := upto == 0 || ops[upto-1].Kind == device.OpFlush
						for _, kill := range []bool{true, false} {
							if !kill && !power {
								continue
							}
							devs, err := killCutState(damaged, ops, upto, kill)
							if err != nil {
								t.Fatal(err)
							}
							states[tool.name]++
							var lost []string
							for _, p := range missing(before, corpus.Readable(devs)) {
								if !allowed[p] {
									lost = append(lost, p)
								}
							}
							if len(lost) > 0 {
								how := "power cut"
								if kill {
									how = "kill -9"
								}
								t.Errorf("%s: %s at op %d of %d of %s: %d readable files lost: %s", v.Name, how, upto, len(ops), tool.name, len(lost), strings.Join(lost[:min(4, len(lost))], " "))
							}
						}
					}
				}
			}
			if len(vs) < 15 {
				t.Fatalf("only %d variants of %d: %v", len(vs), len(all), vs)
			}
			for _, tool := range killTools {
				if flushes[tool.name] < len(vs) {
					t.Errorf("%s: %d flushes over %d variants: the tool did not run", tool.name, flushes[tool.name], len(vs))
				}
				t.Logf("%s: %d variants, %d flushes, %d cut states checked; the finished run lost files in %d variants", tool.name, len(vs), flushes[tool.name], states[tool.name], finishedLoss[tool.name])
			}
		})
	}
}
