package transfer

import (
	"archive/tar"
	"bytes"
	"testing"
	"time"

	"github.com/ddfs/ddfs/pkg/fsys"
)

// tarSeeds are small archives of every entry kind TarIn reads: files,
// directories, symlinks, hard links, devices, xattrs, a GNU sparse 1.0
// file (as TarOut writes it), and a name that leaves the target.
func tarSeeds(t testing.TB) [][]byte {
	var plain bytes.Buffer
	tw := tar.NewWriter(&plain)
	for _, h := range []*tar.Header{
		{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "d/f", Typeflag: tar.TypeReg, Mode: 0o644, Size: 5, PAXRecords: map[string]string{"SCHILY.xattr.user.a": "v"}},
		{Name: "d/l", Typeflag: tar.TypeSymlink, Linkname: "f"},
		{Name: "d/h", Typeflag: tar.TypeLink, Linkname: "d/f"},
		{Name: "c", Typeflag: tar.TypeChar, Mode: 0o600, Devmajor: 1, Devminor: 3},
		{Name: "../escape", Typeflag: tar.TypeReg, Size: 1},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
	}
	tw.Close()
	f := newFS(t, 64<<20)
	in, _ := f.Create("/sp", fsys.Attr{Mode: 0o644})
	f.WriteAt(in, []byte("head"), 0)
	f.WriteAt(in, []byte("tail"), 1<<20)
	f.Truncate(in, 4<<20)
	f.Create("/after", fsys.Attr{Mode: 0o644})
	var sparse bytes.Buffer
	if err := TarOut(f, &sparse, "/"); err != nil {
		t.Fatal(err)
	}
	return [][]byte{plain.Bytes(), sparse.Bytes()}
}

// FuzzTarIn: any byte stream extracted into an image ends, in time
// bounded by its length, without a panic: an error or a tree.
func FuzzTarIn(f *testing.F) {
	for _, s := range tarSeeds(f) {
		f.Add(s)
	}
	maxLegacySparse = 1 << 20
	f.Fuzz(func(t *testing.T, archive []byte) {
		fs := newFS(t, 64<<20)
		defer fs.Close()
		start := time.Now()
		_ = TarIn(fs, bytes.NewReader(archive), "/", Options{})
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("TarIn of %d bytes took %v", len(archive), d)
		}
	})
}
