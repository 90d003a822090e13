package fsys

import (
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
)

// TestStatfsFree: statfs's free bytes are the device bytes no chunk holds
// (counted here from the chunk map: each copy of a single or dup chunk
// takes its length) plus what the data chunks have free, before and after
// writes make new chunks.
func TestStatfsFree(t *testing.T) {
	f := newFSOn(t, device.NewMemDevice("m", 1<<30), store.CreateParams{FSID: [16]byte{11}, Csum: format.CsumCRC32C,
		Data: format.ProfileSingle}, Options{})
	check := func(when string) {
		t.Helper()
		held, dataFree := uint64(0), uint64(0)
		for _, c := range f.st.Vol.Chunks.All() {
			held += c.Length * uint64(len(c.Stripes))
		}
		for _, bg := range f.st.BlockGroups() {
			if bg.Chunk.Type == format.ChunkData {
				dataFree += bg.Free()
			}
		}
		st := f.Statfs()
		if want := st.TotalBytes - held + dataFree; st.FreeBytes != want || held == 0 {
			t.Fatalf("%s: free %d, want %d (chunks hold %d of %d)", when, st.FreeBytes, want, held, st.TotalBytes)
		}
	}
	check("new")
	for i := range 3 {
		write(t, f, "/f"+string(rune('a'+i)), rnd(uint64(50+i), 100<<20))
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	check("after 300 MiB")
}
