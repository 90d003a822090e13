package transfer

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ddfs/ddfs/pkg/fsys"
)

// TestCopyOutBigFile copies out files bigger than half the copy buffer
// (read and written on two goroutines): the bytes, a hole in the middle
// and the zero blocks inside data ranges come out as a serial copy would
// have them; a file that fails to write fails the copy (no hang, no
// partial file left).
func TestCopyOutBigFile(t *testing.T) {
	f := newFS(t, 512<<20)
	rng := rand.New(rand.NewPCG(7, 9))
	want := make([]byte, 3*bufSize+12345)
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	clear(want[bufSize/2+4096 : bufSize/2+3*4096]) // zero blocks in a data range
	clear(want[bufSize : 2*bufSize])               // a hole
	in, err := f.Create("/big", fsys.Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int{{0, bufSize}, {2 * bufSize, len(want)}} {
		if err := f.WriteAt(in, want[r[0]:r[1]], uint64(r[0])); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(in, uint64(len(want))); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := CopyOut(f, "/big", out, Options{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("copy differs (%d bytes, err %v)", len(got), err)
	}
	fh, _ := os.Open(out)
	defer fh.Close()
	hole, err := unix.Seek(int(fh.Fd()), 0, unix.SEEK_HOLE)
	if err != nil || hole >= int64(len(want)) {
		t.Fatalf("no hole in the copy: SEEK_HOLE %d, %v", hole, err)
	}

	// A writer that fails: pwrite on a read-only descriptor.
	ro, _ := os.Open(out)
	defer ro.Close()
	c := &outCopier{f: f, buf: make([]byte, bufSize)}
	res := make(chan error, 1)
	go func() {
		werr, rerr := c.writeData(in, &fdWriter{fd: int(ro.Fd())})
		res <- errors.Join(werr, rerr)
	}()
	select {
	case err := <-res:
		if !errors.Is(err, unix.EBADF) {
			t.Fatalf("write to a read-only descriptor: %v, want EBADF", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("copy-out hangs after a write error")
	}
}
