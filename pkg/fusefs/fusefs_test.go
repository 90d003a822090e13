package fusefs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

// needFUSE skips only where the kernel has no FUSE.
func needFUSE(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("needs /dev/fuse (FUSE in the kernel) to mount: %v", err)
	}
}

func memFS(t *testing.T) *fsys.FS {
	t.Helper()
	return memFSOn(t, device.NewMemDevice("m0", 512<<20))
}

// memFSOn makes a new filesystem on d.
func memFSOn(t *testing.T, d *device.MemDevice) *fsys.FS {
	t.Helper()
	st, err := store.Create(store.CreateParams{FSID: [16]byte{7}, Csum: format.CsumCRC32C, NodeSize: 16384, SectorSize: 4096,
		Data: format.ProfileSingle, Metadata: format.ProfileDup, Devices: []store.NewDevice{{Dev: d, Path: d.Name()}}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.New(st, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.InitRoot(fsys.Attr{Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestConcurrentOps: many processes' worth of calls at once (8 goroutines
// creating, writing, reading, renaming, listing and removing) with the
// commit timer firing every 50 ms: under -race (make race) this proves the
// one-mutex rule; every file reads back what was written, and fsck is
// clean after the unmount.
func TestConcurrentOps(t *testing.T) {
	needFUSE(t)
	f := memFS(t)
	dir := t.TempDir()
	s, err := Mount(dir, f, Options{Commit: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			errs <- worker(filepath.Join(dir, fmt.Sprintf("g%d", g)), g)
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			s.Unmount()
			s.Wait()
			t.Fatal(err)
		}
	}
	if err := s.Unmount(); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	rep, err := check.CheckVolume(f.Store().Vol, check.Options{CheckData: true})
	if err != nil || !rep.Clean() {
		t.Fatalf("fsck after the unmount: %v %v", err, rep.Problems)
	}
}

func worker(d string, g int) error {
	if err := os.Mkdir(d, 0o755); err != nil {
		return err
	}
	for i := 0; i < 40; i++ {
		p := filepath.Join(d, fmt.Sprintf("f%d", i))
		want := bytes.Repeat([]byte{byte(g), byte(i)}, 3000+i*100)
		if err := os.WriteFile(p, want, 0o644); err != nil {
			return err
		}
		if i%3 == 0 {
			q := p + ".moved"
			if err := os.Rename(p, q); err != nil {
				return err
			}
			p = q
		}
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			return fmt.Errorf("%s: %d bytes back, want %d (%v)", p, len(got), len(want), err)
		}
		if i%5 == 0 {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
		if _, err := os.ReadDir(d); err != nil {
			return err
		}
	}
	return nil
}
