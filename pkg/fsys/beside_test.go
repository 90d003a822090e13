package fsys

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/diskfs/go-diskfs/partition/gpt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// besideImage makes an image file of files besideFiles, each besideSize
// bytes of its own pattern, and returns its path and the data.
// With partitioned, the image is partition 1 of a GPT disk image (its
// path ends in "@1").
func besideImage(t *testing.T, partitioned bool) (string, map[string][]byte) {
	const size = 96 << 20
	path := filepath.Join(t.TempDir(), "a.img")
	o := device.OpenOptions{Mode: device.ReadWrite, Create: true, CreateSize: size}
	if partitioned {
		f, err := os.Create(path)
		must(t, err)
		must(t, f.Truncate(size+2<<20))
		tbl := &gpt.Table{LogicalSectorSize: 512, PhysicalSectorSize: 512, ProtectiveMBR: true,
			Partitions: []*gpt.Partition{{Index: 1, Start: 2048, End: 2048 + size/512 - 1, Type: gpt.LinuxFilesystem}}}
		must(t, tbl.Write(f, size+2<<20))
		must(t, f.Close())
		path, o = path+"@1", device.OpenOptions{Mode: device.ReadWrite}
	}
	d, err := device.Open(path, o)
	must(t, err)
	st, tx, err := store.CreateTx(store.CreateParams{FSID: [16]byte{7}, Csum: format.CsumCRC32C, NodeSize: 16384, SectorSize: 4096,
		Data: format.ProfileSingle, Metadata: format.ProfileDup, Devices: []store.NewDevice{{Dev: d, Path: path}}})
	must(t, err)
	f, err := New(st, Options{})
	must(t, err)
	f.Adopt(tx)
	must(t, f.InitRoot(Attr{Mode: 0o755}))
	files := map[string][]byte{}
	for i := range besideFiles {
		p := fmt.Sprintf("/f%d", i)
		files[p] = bytes.Repeat([]byte{byte(i + 1), byte(i * 7)}, besideSize/2)
		in, err := f.Create(p, Attr{Mode: 0o644})
		must(t, err)
		must(t, f.WriteAt(in, files[p], 0))
	}
	must(t, f.Close())
	return path, files
}

const besideFiles, besideSize = 16, 256 << 10

func openPath(t *testing.T, path string, o volume.Options) (*FS, error) {
	st, err := store.Open([]string{path}, o)
	if err != nil {
		return nil, err
	}
	f, err := New(st, Options{})
	if err != nil {
		st.Close()
	}
	return f, err
}

// TestReaderBesideWriter: a read-only open of an image a writer holds
// reads the writer's last commit, and keeps reading it exactly while the
// writer rewrites every file in later commits: the space those commits
// free stays unused while the reader may read it, then is reused. A new
// writer refuses the image while a reader of an older commit remains.
// The same on partition 1 of a disk image (its own reader marks).
func TestReaderBesideWriter(t *testing.T) {
	t.Run("image", func(t *testing.T) { readerBesideWriter(t, false) })
	t.Run("partition", func(t *testing.T) { readerBesideWriter(t, true) })
}

func readerBesideWriter(t *testing.T, partitioned bool) {
	path, files := besideImage(t, partitioned)
	w, err := openPath(t, path, volume.Options{Write: true})
	must(t, err)
	if _, err := openPath(t, path, volume.Options{}); !errors.Is(err, device.ErrBusy) {
		t.Fatalf("a reader without Beside: %v", err)
	}
	r, err := openPath(t, path, volume.Options{Beside: true})
	must(t, err)
	if !r.st.Vol.Beside() {
		t.Fatal("the reader is not beside the writer")
	}
	rewrite := func(round int) {
		for i := range besideFiles {
			in, err := w.Resolve(fmt.Sprintf("/f%d", i), true)
			must(t, err)
			must(t, w.WriteAt(in, bytes.Repeat([]byte{byte(round)}, besideSize), 0))
		}
		must(t, w.Sync())
	}
	for round := range 6 {
		rewrite(100 + round)
	}
	held := w.st.HeldForReaders()
	if held < besideFiles*besideSize {
		t.Fatalf("%d bytes held for the reader, want the first rewrite's %d at least", held, besideFiles*besideSize)
	}
	for p, want := range files {
		in, err := r.Resolve(p, true)
		must(t, err)
		got := make([]byte, in.Size)
		if n, err := r.ReadAt(in, got, 0); n != len(want) || err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s beside the writer: %d bytes (%v), equal %v", p, n, err, bytes.Equal(got, want))
		}
	}
	must(t, w.Close())
	if _, err := openPath(t, path, volume.Options{Write: true}); !errors.Is(err, device.ErrBusy) {
		t.Fatalf("a writer with a reader of an older commit: %v", err)
	}
	must(t, r.Close())
	w, err = openPath(t, path, volume.Options{Write: true})
	must(t, err)
	rewrite(200)
	if n := w.st.HeldForReaders(); n != 0 {
		t.Fatalf("%d bytes held with no reader", n)
	}
	must(t, w.Close())
}
