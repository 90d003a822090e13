package fsys

import (
	"bytes"
	"fmt"

	"github.com/ddfs/ddfs/format"
	"testing"
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
