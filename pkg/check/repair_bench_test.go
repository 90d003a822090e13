package check

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

// benchImage is a filesystem of dirs × files small files, with the link
// count of damage of them bumped in one transaction (as bench/fsckdamage
// damages an image for bench/fsck.sh).
func benchImage(b *testing.B, dirs, files, damage int) (clean, damaged []*device.MemDevice) {
	b.Helper()
	f, devs := newFS(b, layout{1, format.ProfileSingle, format.ProfileDup})
	for d := 0; d < dirs; d++ {
		_, err := f.Mkdir(fmt.Sprintf("/d%d", d), fsys.Attr{Mode: 0o755})
		must(b, err)
		for i := 0; i < files; i++ {
			in, err := f.Create(fmt.Sprintf("/d%d/f%d", d, i), fsys.Attr{Mode: 0o644})
			must(b, err)
			must(b, f.WriteAt(in, pattern(100+(i%50)*200, byte(i)), 0))
		}
		must(b, f.Sync())
	}
	damaged = copyDevs(devs)
	vol, err := opener(damaged)()
	must(b, err)
	st, err := store.OpenVolume(vol)
	must(b, err)
	tx, err := st.Begin()
	must(b, err)
	n := 0
	t := tx.Tree(format.FSTree)
	for ino := uint64(format.RootDirIno + 1); n < damage; ino++ {
		k := format.Key{ObjectID: ino, Type: format.InodeItemKey}
		raw, err := t.Get(k)
		must(b, err)
		in, err := format.UnmarshalInodeItem(raw)
		must(b, err)
		if in.FileType() != format.FileTypeRegular {
			continue
		}
		in.Nlink++
		must(b, t.Put(k, format.MarshalInodeItem(in)))
		n++
	}
	must(b, tx.Commit())
	must(b, vol.Close())
	return devs, damaged
}

func copyDevs(devs []*device.MemDevice) []*device.MemDevice {
	out := make([]*device.MemDevice, len(devs))
	for i, d := range devs {
		out[i] = d.Snapshot()
	}
	return out
}

// BenchmarkRepairVsCheck: fsck -y on 1,000 damaged inodes against a
// clean check of the same tree (issue 13's target: within 3×), each
// iteration one of each, interleaved; reports the ratio of the totals.
func BenchmarkRepairVsCheck(b *testing.B) {
	clean, damaged := benchImage(b, 60, 200, 1000)
	var tc, tr time.Duration
	for i := 0; i < b.N; i++ {
		runtime.GC() // the copies' garbage is not the check's
		t0 := time.Now()
		vol, err := opener(clean)()
		must(b, err)
		rep, err := CheckVolume(vol)
		must(b, err)
		vol.Close()
		tc += time.Since(t0)
		if len(rep.Problems) != 0 {
			b.Fatalf("clean image: %v", rep.Problems[0])
		}
		devs := copyDevs(damaged)
		runtime.GC()
		t0 = time.Now()
		rep, err = Repair(opener(devs), Options{Mode: ModeRepair})
		must(b, err)
		tr += time.Since(t0)
		if fixed := len(codesOf(rep.Problems, false)); fixed != 1000 {
			b.Fatalf("repair: %d problems, want 1000", fixed)
		}
	}
	b.ReportMetric(tc.Seconds()/float64(b.N), "check-s/op")
	b.ReportMetric(tr.Seconds()/float64(b.N), "repair-s/op")
	b.ReportMetric(float64(tr)/float64(tc), "repair/check")
}
