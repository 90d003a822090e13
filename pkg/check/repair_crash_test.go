package check

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/volume"
)

// where is a problem without its message: what a crash state must not
// add to the damage (messages carry counts that a fix changes).
func where(p Problem) string {
	c := -1
	if p.Copy != nil {
		c = *p.Copy
	}
	return fmt.Sprintf("%s/%s/%d/%d/%d/%d/%d", p.Code, p.Tree, p.Ino, p.Logical, p.DevID, p.Offset, c)
}

func problemSet(rep *Report) map[string]bool {
	out := map[string]bool{}
	for _, p := range rep.Problems {
		// A commit cut between two devices' superblocks leaves one
		// device a generation behind: every commit's crash window (the
		// crash harness allows it too), fixed by the next commit or -p.
		if p.Pass != PassSuper {
			out[where(p)] = true
		}
	}
	return out
}

// damageMany makes one image with many kinds of damage at once.
func damageMany(t *testing.T) []*device.MemDevice {
	f, base := newFS(t, layout{2, format.ProfileRaid1, format.ProfileRaid1})
	populate(t, f)
	s := newSurgeon(t, base)
	const root = format.RootDirIno
	s.inode(s.ino("/big"), func(in *format.InodeItem) { in.Nlink++ })
	s.inode(s.ino("/dir/sub"), func(in *format.InodeItem) { in.Size = 7 })
	s.inode(s.ino("/mid"), func(in *format.InodeItem) { in.NBytes = 1 })
	s.link(root, "ghost", 90000, format.FileTypeRegular)
	s.del(format.FSTree, format.Key{ObjectID: 90000, Type: format.InodeRefKey, Offset: root})
	s.put(format.FSTree, inodeKey(50000), format.MarshalInodeItem(&format.InodeItem{Mode: syscall.S_IFREG | 0o644, Nlink: 1, Generation: 1}))
	small := s.ino("/small")
	s.del(format.FSTree, format.Key{ObjectID: small, Type: format.InodeRefKey, Offset: root})
	l, n := s.diskExtent(s.ino("/zeros"))
	k := format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n}
	e, err := format.UnmarshalExtentItem(s.get(format.ExtentTree, k))
	must(t, err)
	e.Refs = 3
	s.put(format.ExtentTree, k, format.MarshalExtentItem(e))
	must(t, s.tx.Commit())
	// A bad copy of a data sector and of a node.
	dl, _ := s.diskExtent(s.ino("/mid"))
	dt, err := s.st.Vol.Locate(dl)
	must(t, err)
	flip(s.devs[dt[0].DevID-1], int64(dt[0].Physical)+7)
	copies := allNodeCopies(t, s.devs)
	nc := copies[len(copies)/3]
	flip(s.devs[nc.target.DevID-1], int64(nc.target.Physical)+500)
	return s.devs
}

// TestRepairCrash records a -y repair of many kinds of damage, then
// replays it up to every write and, after each flush, with the writes
// of the next batch in random subsets and orders with the last one torn:
// every state opens and has no problem the damaged image did not have.
func TestRepairCrash(t *testing.T) {
	damaged := damageMany(t)
	before := fsckDevs(t, damaged, Options{CheckData: true})
	want := problemSet(before)
	if len(want) < 8 {
		t.Fatalf("weak damage: %v", before.Problems)
	}
	// Record the repair on copies of the damaged devices.
	log := device.NewLog()
	work := make([]*device.MemDevice, len(damaged))
	for i, d := range damaged {
		work[i] = d.Snapshot()
	}
	rep, err := Repair(func() (*volume.Volume, error) {
		var ds []device.Device
		for i, d := range work {
			ds = append(ds, log.Wrap(d, i))
		}
		return volume.FromDevices(ds, true)
	}, Options{Mode: ModeRepair, CheckData: true})
	must(t, err)
	if after := fsckDevs(t, work, Options{CheckData: true}); len(after.Problems) != 0 {
		t.Fatalf("after -y: %v\nrepair: %v", after.Problems, rep.Problems)
	}
	ops := log.Ops()
	flushes := device.FlushPoints(ops)
	if len(flushes) < 4 {
		t.Fatalf("%d flushes in %d ops: the repair did not write much", len(flushes), len(ops))
	}
	verify := func(devs []*device.MemDevice, at string) {
		t.Helper()
		got := problemSet(fsckDevs(t, devs, Options{CheckData: true}))
		var extra []string
		for w := range got {
			if !want[w] {
				extra = append(extra, w)
			}
		}
		sort.Strings(extra)
		if len(extra) > 0 {
			t.Fatalf("%s: problems the damage did not have: %s", at, strings.Join(extra, " "))
		}
	}
	replay := func(upto int) []*device.MemDevice {
		devs := make([]*device.MemDevice, len(damaged))
		for i, d := range damaged {
			devs[i] = d.Snapshot()
		}
		must(t, device.Replay(ops, upto, devs))
		return devs
	}
	points := 0
	for upto := 0; upto <= len(ops); upto++ {
		verify(replay(upto), fmt.Sprintf("crash after op %d of %d", upto, len(ops)))
		points++
	}
	r := rand.New(rand.NewPCG(13, 13))
	for i, base := range flushes {
		end := len(ops)
		if i+1 < len(flushes) {
			end = flushes[i+1] - 1
		}
		for trial := 0; trial < 3; trial++ {
			devs := replay(base)
			var applied []device.Op
			for _, op := range ops[base:end] {
				if op.Kind == device.OpWrite && r.IntN(2) == 0 {
					applied = append(applied, op)
				}
			}
			r.Shuffle(len(applied), func(a, b int) { applied[a], applied[b] = applied[b], applied[a] })
			for j, op := range applied {
				data := op.Data
				if j == len(applied)-1 && len(data) > 512 {
					data = data[:512*(1+r.IntN(len(data)/512))]
				}
				devs[op.Dev].WriteAt(data, op.Off)
			}
			verify(devs, fmt.Sprintf("reordered writes after flush at op %d", base))
			points++
		}
	}
	t.Logf("%d crash states of a repair of %d problems (%d ops, %d flushes)", points, len(want), len(ops), len(flushes))
}
