package fsys

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// TestBigDirectoryLookup: a lookup in a directory of 100,000 entries reads
// a handful of nodes (the hashed name index), not the directory.
func TestBigDirectoryLookup(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	f, devs := newTestFS(t, 4<<30, 1)
	if _, err := f.Mkdir("/big", Attr{Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("DDFS_BIGDIR")); err == nil {
		n = v // e.g. 1000000 by hand
	}
	for i := 0; i < n; i++ {
		if _, err := f.Create(fmt.Sprintf("/big/entry-%06d", i), Attr{Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
		if err := f.MaybeCommit(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	// Reopen on a counting device with a cold cache.
	c := device.NewCounting(devs[0])
	vol, err := volume.FromDevices([]device.Device{c}, false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := New(st, Options{})
	before := c.Stats().Reads
	in, err := g.Resolve("/big/entry-054321", false)
	if err != nil || !in.IsRegular() {
		t.Fatal(err)
	}
	if reads := c.Stats().Reads - before; reads > 24 {
		t.Fatalf("lookup in a %d-entry directory read %d nodes", n, reads)
	}
	dir, _ := g.Resolve("/big", false)
	if dir.Size != uint64(n) || dir.Nlink != 2 {
		t.Fatalf("directory size %d nlink %d", dir.Size, dir.Nlink)
	}
}
