package fsys

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// Small files written one after the other are gathered into batches of
// device writes (dataWriter.batch). A batch must end where its chunk ends:
// logical addresses run on into the next chunk, devices do not. 3,000
// files of 12 KiB fill more than one data chunk of a 128 MiB device, and
// each must read back as written, before and after a reopen.
func TestSmallWritesBatchAcrossChunks(t *testing.T) {
	f, devs := newTestFS(t, 128<<20, 1)
	const n, size = 3000, 12 << 10
	want := func(i int) []byte { return rnd(uint64(i)+1, size) }
	for i := range n {
		in, err := f.Create(fmt.Sprintf("/f%04d", i), Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WriteAt(in, want(i), 0); err != nil {
			t.Fatalf("file %d: %v", i, err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	chunks := 0
	for _, c := range f.st.Vol.Chunks.All() {
		if c.Type&format.ChunkData != 0 {
			chunks++
		}
	}
	if chunks < 2 {
		t.Fatalf("%d data chunks: the test must cross a chunk boundary", chunks)
	}
	for _, g := range []*FS{f, reopenFS(t, devs)} {
		for i := range n {
			if got := readAll(t, g, fmt.Sprintf("/f%04d", i)); !bytes.Equal(got, want(i)) {
				t.Fatalf("/f%04d differs", i)
			}
		}
	}
}

// A read-only walk reads the nodes of a freshly built tree mostly in
// windows of several (store.readAhead), and the files' data in windows of
// 1 MiB (dataAhead): far fewer device reads than nodes or files, and
// every entry and byte still as written.
func TestReadOnlyWalkReadsAhead(t *testing.T) {
	f, devs := newTestFS(t, 128<<20, 1)
	const n = 3000
	for i := range n {
		in, err := f.Create(fmt.Sprintf("/f%04d", i), Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WriteAt(in, ahead(i), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	cd := device.NewCounting(devs[0])
	g := openCounting(t, cd)
	st := g.Store()
	root, err := g.Resolve("/", false)
	if err != nil {
		t.Fatal(err)
	}
	before := cd.Stats().Reads
	kids, err := g.Children(root)
	if err != nil || len(kids) != n {
		t.Fatalf("%d children, %v", len(kids), err)
	}
	reads := cd.Stats().Reads - before
	leaves := uint64(0)
	if err := st.Tree(format.FSTree).WalkNodes(func(*format.Node) error { leaves++; return nil }); err != nil {
		t.Fatal(err)
	}
	// A reader reads every copy of a node (issue 36): a window costs a
	// read per copy.
	sb := st.Super()
	copies := uint64(st.Vol.Copies(sb.Roots.Root(format.FSTree).Logical))
	if reads*2 > leaves*copies {
		t.Fatalf("%d device reads for a tree of %d nodes, %d copies each: no read-ahead", reads, leaves, copies)
	}
	// The files' data too (dataAhead): a 1 MiB window serves many files.
	before = cd.Stats().Reads
	for i, k := range kids {
		if b := readAll(t, g, "/"+k.Entry.Name); !bytes.Equal(b, ahead(i)) {
			t.Fatalf("%s differs", k.Entry.Name)
		}
	}
	if reads := cd.Stats().Reads - before; reads*4 > n {
		t.Fatalf("%d device reads for %d files of 8 KiB: no data read-ahead", reads, n)
	}
}

// ahead is file i's data in TestReadOnlyWalkReadsAhead: too big to be inline.
func ahead(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("%7d\n", i)), 1024) }

// A batch starts from a pooled buffer that is not zeroed (zeroing 1 MiB
// per small write was 16% of the mount's CPU on 4K random writes): only
// the bytes gathered may reach the device. Pooled buffers full of 0xEE
// must leave no run of 0xEE anywhere on the device.
func TestBatchWritesOnlyGatheredBytes(t *testing.T) {
	f, devs := newTestFS(t, 64<<20, 1)
	for range 8 {
		b := bytes.Repeat([]byte{0xEE}, ioSize)
		putBuffer(b)
	}
	for i := range 20 {
		in, err := f.Create(fmt.Sprintf("/f%02d", i), Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WriteAt(in, rnd(uint64(i)+1, 5000+i), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	poison := bytes.Repeat([]byte{0xEE}, 256)
	buf := make([]byte, 1<<20)
	for off := int64(0); off < devs[0].Size(); off += int64(len(buf)) {
		if _, err := devs[0].ReadAt(buf, off); err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(buf, poison); i >= 0 {
			t.Fatalf("stale pool bytes on the device at %d", off+int64(i))
		}
	}
	for i := range 20 {
		if got := readAll(t, f, fmt.Sprintf("/f%02d", i)); !bytes.Equal(got, rnd(uint64(i)+1, 5000+i)) {
			t.Fatalf("/f%02d differs", i)
		}
	}
}
