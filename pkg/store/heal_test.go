package store

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/volume"
)

// A read that meets a bad node copy is served by the good one; a writable
// set gets the bad copy rewritten (bytes on disk equal the good copy's),
// a read-only one only reports it.
func TestHealRewritesBadNodeCopy(t *testing.T) {
	for _, write := range []bool{false, true} {
		devs := memDevs(2, 1<<30)
		fs := create(t, devs, format.ProfileRaid1, format.ProfileRaid1)
		model := map[format.Key][]byte{}
		fillTree(t, fs, rand.New(rand.NewPCG(3, 4)), 3000, model)
		sb := fs.Super()
		root := sb.Roots.Root(format.FSTree).Logical
		node := alloc.Range{Start: root, Len: uint64(fs.sb.NodeSize)}
		good := copies(t, fs, devs, node)[1]
		for _, bad := range []int{0} { // a read tries copy 0 first; scrub finds bad later copies
			// Damage one copy on the device itself (the volume would fail over).
			ts, _ := fs.Vol.Locate(root)
			garbage := bytes.Repeat([]byte{0xAB}, 512)
			if _, err := devs[ts[bad].DevID-1].WriteAt(garbage, int64(ts[bad].Physical)+100); err != nil {
				t.Fatal(err)
			}
			fs.Close()
			var healed *[]Heal
			fs, healed = reopenHealing(t, devs, write)
			checkModel(t, fs, model)
			heals := *healed
			if len(heals) != 1 || heals[0].Logical != root || heals[0].Copy != bad || !heals[0].Metadata || heals[0].Repaired != write {
				t.Fatalf("write %v, copy %d damaged: heals %+v", write, bad, heals)
			}
			if s := fs.HealStats(); s.Found != 1 || (s.Repaired == 1) != write {
				t.Fatalf("stats %+v", s)
			}
			got := copies(t, fs, devs, node)
			if bytes.Equal(got[bad], good) != write || !bytes.Equal(got[1-bad], good) {
				t.Fatalf("write %v: copy %d rewritten %v", write, bad, bytes.Equal(got[bad], good))
			}
			if !write {
				// Put it right by hand so the next round damages one copy only.
				if err := fs.Vol.Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := devs[ts[bad].DevID-1].WriteAt(good, int64(ts[bad].Physical)); err != nil {
					t.Fatal(err)
				}
				vol, _ := volume.FromDevices([]device.Device{devs[0], devs[1]}, true)
				fs, _ = OpenVolume(vol)
			}
		}
		fs.Close()
	}
}
