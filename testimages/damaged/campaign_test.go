package damaged

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/scrub"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/trim"
	"github.com/ddfs/ddfs/pkg/volume"
	"github.com/ddfs/ddfs/testimages/damaged/corpus"
)

// A tool of the campaign: a writing tool runs on devs in place; a
// copying tool (out set) leaves them as they are and is judged by the
// files it copies out.
type campaignTool struct {
	name string
	run  func(devs []*device.MemDevice) error
	// out runs the copying tool and lists the files it copied out with
	// their bytes; whole asks it to compare every byte of the image too.
	out func(t *testing.T, devs []*device.MemDevice, whole bool) map[string]bool
}

func openStore(devs []*device.MemDevice, write bool) (*store.FS, error) {
	ds := make([]device.Device, len(devs))
	for i, d := range devs {
		ds[i] = d
	}
	vol, err := volume.FromDevices(ds, write)
	if err != nil {
		return nil, err
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		vol.Close()
	}
	return st, err
}

func runTrim(devs []*device.MemDevice) error {
	st, err := openStore(devs, true)
	if err != nil {
		return err
	}
	_, err = trim.Run(st, trim.Options{})
	return errors.Join(err, st.Close())
}

// runWrite writes new files, enough to need new nodes and data extents.
func runWrite(devs []*device.MemDevice) error {
	st, err := openStore(devs, true)
	if err != nil {
		return err
	}
	defer st.Close()
	f, err := fsys.New(st, fsys.Options{})
	if err != nil {
		return err
	}
	for i := 0; i < 8; i++ {
		in, err := f.Create(fmt.Sprintf("/new%d", i), fsys.Attr{Mode: 0o644})
		if err != nil {
			return err
		}
		if err := f.WriteAt(in, corpus.Content(100+i, 12<<10), 0); err != nil {
			return err
		}
	}
	return f.Sync()
}

// runScrub is ddfs scrub --repair: every bad copy rewritten from a good
// one.
func runScrub(devs []*device.MemDevice) error {
	st, err := openStore(devs, true)
	if err != nil {
		return err
	}
	_, err = scrub.Run(st, scrub.Options{Repair: true})
	return errors.Join(err, st.Close())
}

// rescueOut is ddfs rescue IMAGE DIR. rescueInto fails the test on any
// write or discard rescue tries (the only calls that change a device)
// and, whole, on any byte of the image changed (comparing whole images
// took 15 s of CPU over every variant: whole is asked of one a kind).
func rescueOut(t *testing.T, devs []*device.MemDevice, whole bool) map[string]bool {
	dir := scratchDir(t)
	defer os.RemoveAll(dir)
	if _, err := rescueInto(t, devs, dir, whole); err != nil {
		return nil
	}
	return rescued(dir)
}

func runRepair(mode check.Mode) func([]*device.MemDevice) error {
	return func(devs []*device.MemDevice) error {
		ds := make([]device.Device, len(devs))
		for i, d := range devs {
			ds[i] = d
		}
		_, err := check.Repair(func() (*volume.Volume, error) { return volume.FromDevices(ds, true) }, check.Options{Mode: mode, CheckData: true})
		return err
	}
}

// campaignTools are held to "never worse": no file that read back
// correctly before the tool ran reads otherwise after it (rescue: comes
// out otherwise, and the image is left byte for byte).
var campaignTools = []campaignTool{
	{"trim", runTrim, nil},
	{"write", runWrite, nil},
	{"fsck -p", runRepair(check.ModePreen), nil},
	{"fsck -y", runRepair(check.ModeRepair), nil},
	{"scrub --repair", runScrub, nil},
	{"rescue", nil, rescueOut},
}

// cannotEndClean are the damages after which fsck -n may still find
// problems once fsck -y ran (issue 36 names each), by variant name.
var cannotEndClean = []struct{ prefix, why string }{
	{"sysarray 0 stripe 0 devid", "no superblock copy validates (both stripes of a dup or raid1 system chunk on one device): the set does not open, fsck exits 8"},
	{"sysarray 0 stripe 1 devid", "as stripe 0"},
	{"delete chunk/", "the chunk tree is the mapping itself: without a CHUNK_ITEM or DEV_ITEM, space no item maps (a chunk-recover that scans the devices is not written); repair writes nothing through a broken mapping"},
	{"node chunk/", "as delete chunk/: the chunk tree's only node"},
	{"delete csum/", "as node csum/: that item's checksums are lost (fsck.ddfs --rebuild-csums is the explicit choice)"},
	{"node csum/", "the checksums are lost, and -y never invents checksums for data that was never verified (left to a checksum rebuild that reads every copy)"},
}

// cannotFix are problem codes -y has no fix for that a single damage can
// leave alone.
var cannotFix = map[string]string{
	"SYMLINK_TARGET": "a symlink's target extent deleted: no fix makes a target up",
}

// mayStayUnclean reports whether the variant's leftovers after -y are of
// a class listed above.
func mayStayUnclean(name, left string) bool {
	for _, c := range cannotEndClean {
		if strings.HasPrefix(name, c.prefix) {
			return true
		}
	}
	for _, code := range strings.Fields(left) {
		if cannotFix[code] == "" {
			return false
		}
	}
	return true
}

// TestCampaign: no writing tool makes a file that read back correctly
// before it ran unreadable or different, rescue copies every such file
// out with its bytes, and after fsck -y a check
// (fsck -n) finds nothing but for the classes of cannotEndClean. make
// test deletes every item, loses every node's copies and edits the
// system chunk array; DDFS_CAMPAIGN_FIELDS=N also changes N fields of
// each item (make stress), whose leftovers after -y are logged.
func TestCampaign(t *testing.T) {
	fields := 0
	if s := os.Getenv("DDFS_CAMPAIGN_FIELDS"); s != "" {
		fmt.Sscan(s, &fields)
	}
	tools := campaignTools
	for _, ndev := range []int{1, 2} {
		t.Run(fmt.Sprintf("%ddev", ndev), func(t *testing.T) {
			t.Parallel()
			base, err := corpus.Base(ndev)
			if err != nil {
				t.Fatal(err)
			}
			if got := corpus.Readable(base); len(got) != len(corpus.Expected()) {
				t.Fatalf("the undamaged base reads back %d of %d files", len(got), len(corpus.Expected()))
			}
			vs, err := corpus.Variants(base, fields, 1)
			if err != nil {
				t.Fatal(err)
			}
			losses, kinds := map[string][]string{}, map[string]bool{}
			var unclean []string // variants -n still finds problems in after -y
			for _, v := range vs {
				damaged, err := corpus.Damage(base, v.Damage)
				if err != nil {
					continue // the damage could not be made (e.g. an item the commit itself rewrote)
				}
				before := corpus.Readable(damaged)
				firstOfKind := !kinds[variantKind(v.Name)]
				kinds[variantKind(v.Name)] = true
				for _, tool := range tools {
					work := corpus.Snapshots(damaged)
					var after map[string]bool
					if tool.out != nil {
						after = tool.out(t, work, firstOfKind)
					} else {
						tool.run(work)
						after = corpus.Readable(work)
					}
					if lost := missing(before, after); len(lost) > 0 {
						losses[tool.name] = append(losses[tool.name], fmt.Sprintf("%s: %d lost (%s)", v.Name, len(lost), strings.Join(lost[:min(3, len(lost))], " ")))
					}
					if tool.name != "fsck -y" {
						continue
					}
					left := leftAfter(work)
					switch {
					case left == "":
					case strings.HasPrefix(v.Name, "field ") || mayStayUnclean(v.Name, left):
						unclean = append(unclean, v.Name+": "+left)
					default:
						t.Errorf("fsck -n after fsck -y: %s: %s", v.Name, left)
					}
				}
			}
			t.Logf("%d variants", len(vs))
			for _, tool := range tools {
				t.Logf("%s: %d variants lost files", tool.name, len(losses[tool.name]))
				for _, l := range losses[tool.name] {
					t.Errorf("%s made readable files unreadable: %s", tool.name, l)
				}
			}
			t.Logf("fsck -n after -y: not clean in %d variants of classes that may stay so", len(unclean))
			for _, u := range unclean {
				t.Logf("not clean after fsck -y: %s", u)
			}
		})
	}
}

// missing is what of want got lacks, sorted.
func missing(want, got map[string]bool) []string {
	var out []string
	for p := range want {
		if !got[p] {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// leftAfter checks devs as fsck -n does and returns the codes of the
// problems it finds ("" when clean).
func leftAfter(devs []*device.MemDevice) string {
	ds := make([]device.Device, len(devs))
	for i, d := range corpus.Snapshots(devs) {
		ds[i] = d
	}
	vol, err := volume.FromDevices(ds, false)
	if err != nil {
		return "open: " + err.Error()
	}
	defer vol.Close()
	rep, err := check.CheckVolume(vol, check.Options{CheckData: true})
	if err != nil {
		return "check: " + err.Error()
	}
	var codes []string
	for _, p := range rep.Problems {
		if !p.Warning && !p.Fixed {
			codes = append(codes, string(p.Code))
		}
	}
	if len(rep.Incomplete) > 0 {
		codes = append(codes, "incomplete:"+strings.Join(rep.Incomplete, ","))
	}
	return strings.Join(codes, " ")
}
