// Package testimages holds frozen images of every format version; every
// one must still open and check clean.
package testimages

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

func unpack(t *testing.T, dir string) []string {
	t.Helper()
	gz, _ := filepath.Glob("*.img.gz")
	if len(gz) == 0 {
		t.Fatal("no frozen images")
	}
	var out []string
	for _, g := range gz {
		in, err := os.Open(g)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(in)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, strings.TrimSuffix(g, ".gz"))
		f, err := os.Create(dst)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, zr); err != nil {
			t.Fatal(err)
		}
		f.Close()
		in.Close()
		out = append(out, dst)
	}
	return out
}

// features are the checks of each frozen set beyond the common tree: its
// device count and what its feature left in the image.
var features = map[string]struct {
	devices int
	check   func(t *testing.T, st *store.FS, f *fsys.FS)
}{
	"v1-raid1-2dev": {2, func(t *testing.T, st *store.FS, f *fsys.FS) {
		profiles(t, st, format.ProfileSingle, format.ProfileRaid1)
	}},
	"v1-dedupe-zstd": {1, func(t *testing.T, st *store.FS, f *fsys.FS) {
		sb := st.Super()
		if sb.Settings.DedupeHits == 0 || sb.Incompat&format.IncompatDedupe == 0 || sb.Incompat&format.IncompatCompression == 0 {
			t.Fatalf("dedupe hits %d, incompat %#x", sb.Settings.DedupeHits, sb.Incompat)
		}
		for _, p := range []string{"/dup1", "/dup2"} {
			expectFile(t, f, p, compressible())
		}
	}},
	"v1-discard-async": {1, func(t *testing.T, st *store.FS, f *fsys.FS) {
		sb := st.Super()
		if sb.Compat&format.CompatDiscardTree == 0 || !st.Tree(format.DiscardTree).First().Valid() {
			t.Fatalf("no pending discards recorded (compat %#x)", sb.Compat)
		}
		if _, err := f.Resolve("/churn", false); !errors.Is(err, syscall.ENOENT) {
			t.Fatalf("/churn: %v", err)
		}
	}},
	"v1-snapshots": {1, func(t *testing.T, st *store.FS, f *fsys.FS) {
		if st.Super().Incompat&format.IncompatSnapshots == 0 {
			t.Fatalf("incompat %#x: no snapshots feature", st.Super().Incompat)
		}
		expectFile(t, f, "/snap/b", snapshotFile('b'))
		if _, err := f.Resolve("/snap/a", false); !errors.Is(err, syscall.ENOENT) {
			t.Fatalf("live /snap/a: %v", err)
		}
		for name, want := range map[string][]string{"before": nil, "after": {"a"}} {
			v, err := f.OpenSnapshot(name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := v.Resolve("/snap", false); (err == nil) != (want != nil) {
				t.Fatalf("%s: /snap: %v", name, err)
			}
			if want != nil {
				expectFile(t, v, "/snap/a", snapshotFile('a'))
			}
			commonTree(t, v) // shared with the live tree
			v.Close()
		}
	}},
	"v1-raid10-4dev": {4, func(t *testing.T, st *store.FS, f *fsys.FS) {
		profiles(t, st, format.ProfileRaid10, format.ProfileRaid10)
	}},
	"v1-tiered-4dev": {4, func(t *testing.T, st *store.FS, f *fsys.FS) {
		if st.Super().Settings.AllocPolicy != format.AllocTiered {
			t.Fatalf("policy %v", st.Super().Settings.AllocPolicy)
		}
		for _, d := range st.DevItems() {
			if d.Rotational != (d.DevID > 2) {
				t.Fatalf("device %d: rotational %v", d.DevID, d.Rotational)
			}
		}
	}},
}

// profiles requires every data chunk to use data and every metadata chunk meta.
func profiles(t *testing.T, st *store.FS, data, meta format.Profile) {
	t.Helper()
	for _, c := range st.Vol.Chunks.All() {
		want := meta
		if c.Type == format.ChunkData {
			want = data
		}
		if c.Type != format.ChunkSystem && c.Profile != want {
			t.Fatalf("chunk %d (%v): profile %v, want %v", c.Logical, c.Type, c.Profile, want)
		}
	}
}

func TestFrozenImagesOpenAndCheckClean(t *testing.T) {
	dir := t.TempDir()
	imgs := unpack(t, dir)
	sets := map[string]bool{}
	for _, img := range imgs {
		sets[strings.SplitN(filepath.Base(img), ".", 2)[0]] = true
	}
	for name := range features {
		if !sets[name] {
			t.Errorf("frozen set %s is missing", name)
		}
	}
	for set := range sets {
		t.Run(set, func(t *testing.T) {
			feat, ok := features[set]
			if !ok {
				t.Fatalf("no checks for frozen set %s", set)
			}
			first := filepath.Join(dir, set+".1.img")
			rep, err := check.Check([]string{first}, check.Options{CheckData: true})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Clean() || rep.Devices != feat.devices || rep.Nodes < 4 {
				t.Fatalf("check: %+v", rep)
			}
			st, err := store.Open([]string{first}, volume.Options{})
			if err != nil {
				t.Fatal(err)
			}
			f, err := fsys.New(st, fsys.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			commonTree(t, f)
			feat.check(t, st, f)
		})
	}
}

// commonTree checks what gen's populate wrote into every set.
func commonTree(t *testing.T, f *fsys.FS) {
	t.Helper()
	for i := 0; i < 300; i++ {
		in := expectFile(t, f, fmt.Sprintf("/d/f%03d", i), content(i%5))
		if in.UID != 1000 || in.Mode != 0o100644 {
			t.Fatalf("/d/f%03d: uid %d, mode %o", i, in.UID, in.Mode)
		}
	}
	if target, err := f.Readlink("/link"); err != nil || target != "d/f001" {
		t.Fatalf("symlink: %q %v", target, err)
	}
	h, err := f.Resolve("/hard", false)
	if err != nil || h.Nlink != 2 {
		t.Fatalf("hard link: %v", err)
	}
	sp, err := f.Resolve("/sparse", false)
	if err != nil || sp.Size != 40<<20+3 || sp.NBytes > 4096 {
		t.Fatalf("sparse: %+v %v", sp, err)
	}
	d, _ := f.Resolve("/d", false)
	if v, err := f.GetXattr(d, "user.frozen"); err != nil || string(v) != "v1" {
		t.Fatalf("xattr %q %v", v, err)
	}
}

// expectFile requires the regular file p to hold want.
func expectFile(t *testing.T, f *fsys.FS, p string, want []byte) *fsys.Inode {
	t.Helper()
	in, err := f.Resolve(p, true)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, in.Size)
	if _, err := f.ReadAt(in, got, 0); err != nil && err != io.EOF {
		t.Fatalf("%s: %v", p, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes differ from the %d expected", p, len(got), len(want))
	}
	return in
}

// compressible mirrors gen.Compressible.
// snapshotFile is /snap/a ('a') and /snap/b ('b') of the snapshots set.
func snapshotFile(b byte) []byte {
	p := make([]byte, 100<<10)
	for j := range p {
		p[j] = b + byte(j/4096)
	}
	return p
}

func compressible() []byte {
	b := make([]byte, 64<<10)
	for j := range b {
		b[j] = "ddfs frozen image "[j%18]
	}
	return b
}

// content mirrors gen.Content (package main cannot be imported).
func content(i int) []byte {
	b := make([]byte, 3000+i*1000)
	for j := range b {
		b[j] = byte(i + j*7)
	}
	return b
}
