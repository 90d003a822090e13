package transfer

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/ddfs/ddfs/pkg/fsys"
)

// tarOf writes headers (and "data" for regular files) as a tar stream.
func tarOf(t *testing.T, hs ...*tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, h := range hs {
		if h.Typeflag == tar.TypeReg {
			h.Size = 4
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte("data"))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func at(sec int64) time.Time { return time.Unix(sec, 0) }

func attrsOf(t *testing.T, f *fsys.FS, p string) (mode, uid, gid uint32, mtime int64) {
	t.Helper()
	in, err := f.Resolve(p, false)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return in.Mode & 0o7777, in.UID, in.GID, in.Mtime.Sec
}

// TestTarInDirectoryTimesAndTop: directory mtimes survive the entries
// made in them afterwards, and "./" gives the target its mode, owner and
// times, into the root and into a directory tar-in makes.
func TestTarInDirectoryTimesAndTop(t *testing.T) {
	archive := tarOf(t,
		&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o750, Uid: 7, Gid: 8, ModTime: at(1000)},
		&tar.Header{Name: "./d/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: at(2000)},
		&tar.Header{Name: "./d/e/", Typeflag: tar.TypeDir, Mode: 0o700, ModTime: at(3000)},
		&tar.Header{Name: "./d/e/g", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: at(4000)},
		&tar.Header{Name: "./d/f", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: at(5000)},
		&tar.Header{Name: "./z/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: at(6000)},
		&tar.Header{Name: "./z/y", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: at(7000)},
	)
	for _, target := range []string{"/", "/made"} {
		f := newFS(t, 256<<20)
		if err := TarIn(f, bytes.NewReader(archive), target, Options{}); err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		if m, u, g, mt := attrsOf(t, f, target); m != 0o750 || u != 7 || g != 8 || mt != 1000 {
			t.Errorf("%s: mode %o uid %d gid %d mtime %d, want the ./ entry's 750 7 8 1000", target, m, u, g, mt)
		}
		for p, want := range map[string]int64{"d": 2000, "d/e": 3000, "d/e/g": 4000, "d/f": 5000, "z": 6000} {
			if _, _, _, mt := attrsOf(t, f, strings.TrimSuffix(target, "/")+"/"+p); mt != want {
				t.Errorf("%s/%s: mtime %d, want %d", target, p, mt, want)
			}
		}
		// Extracting again over the tree (directory over directory) keeps them too.
		if err := TarIn(f, bytes.NewReader(archive), target, Options{}); err != nil {
			t.Fatal(err)
		}
		if _, _, _, mt := attrsOf(t, f, strings.TrimSuffix(target, "/")+"/d"); mt != 2000 {
			t.Errorf("%s/d after a second extraction: mtime %d", target, mt)
		}
	}
}

// TestTarInTarget: a missing target is made when its parent exists; else
// the error names the missing parent, not an entry below it.
func TestTarInTarget(t *testing.T) {
	archive := tarOf(t, &tar.Header{Name: "first", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: at(1)})
	f := newFS(t, 256<<20)
	if err := TarIn(f, bytes.NewReader(archive), "/new", Options{}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, f, "/new/first"); string(got) != "data" {
		t.Fatalf("/new/first: %q", got)
	}
	err := TarIn(f, bytes.NewReader(archive), "/missing/sub", Options{})
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != "/missing" || !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("into /missing/sub: %v, want ENOENT naming /missing", err)
	}
	err = TarIn(f, bytes.NewReader(archive), "/new/first", Options{})
	if !errors.As(err, &pe) || pe.Path != "/new/first" || !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("into a file: %v, want ENOTDIR", err)
	}
}

// TestTarOutTopEntry: a directory's archive starts with "./" carrying the
// directory's own mode, owner and mtime; extracted, they come back.
func TestTarOutTopEntry(t *testing.T) {
	f := newFS(t, 256<<20)
	d, err := f.Mkdir("/d", fsys.Attr{Mode: 0o710, UID: 11, GID: 12})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Create("/d/x", fsys.Attr{Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	mt := fsys.TimespecOf(at(123456))
	if err := f.SetattrInode(d, fsys.SetAttr{Mtime: &mt, Atime: &mt}); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := TarOut(f, &b, "/d"); err != nil {
		t.Fatal(err)
	}
	h, err := tar.NewReader(bytes.NewReader(b.Bytes())).Next()
	if err != nil || h.Name != "./" || h.Typeflag != tar.TypeDir || h.Mode != 0o710 || h.Uid != 11 || h.Gid != 12 || h.ModTime.Unix() != 123456 {
		t.Fatalf("first entry %+v, %v", h, err)
	}
	g := newFS(t, 256<<20)
	if err := TarIn(g, &b, "/", Options{}); err != nil {
		t.Fatal(err)
	}
	if m, u, gid, mt := attrsOf(t, g, "/"); m != 0o710 || u != 11 || gid != 12 || mt != 123456 {
		t.Fatalf("root after tar-in: %o %d %d %d", m, u, gid, mt)
	}
}

// bzip2 of a ustar archive holding d/ and d/f ("hi\n"), made by tar | bzip2
// (the standard library reads bzip2 but cannot write it).
const tarBz2 = "QlpoOTFBWSZTWfMYn2AAAKP7kMmQAEJAAP+AAANlYJ4ABAAACCAAlIKpCEeoAGm1Bp6gkqaNMg0ZABoJh9xdKDhqQFr0gFGLST2BMsMHMHiEUCfJxHt3wIiqRGlsnhJCsmJ5S5Z0sotTe2uE8WLKtFU4aLXtL7mamrs3LsC67iiD8XckU4UJDzGJ9gA="

// TestTarInCompressed: gzip, zstd, xz and bzip2 input is recognised by
// its magic and decompressed; empty or non-tar input is ErrNotTar.
func TestTarInCompressed(t *testing.T) {
	plain := tarOf(t, &tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755}, &tar.Header{Name: "d/f", Typeflag: tar.TypeReg, Mode: 0o644})
	squeeze := func(mk func(io.Writer) (io.WriteCloser, error)) []byte {
		var b bytes.Buffer
		w, err := mk(&b)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(plain)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	bz, _ := base64.StdEncoding.DecodeString(tarBz2)
	cases := map[string][]byte{
		"plain": plain,
		"gzip":  squeeze(func(w io.Writer) (io.WriteCloser, error) { return gzip.NewWriter(w), nil }),
		"zstd":  squeeze(func(w io.Writer) (io.WriteCloser, error) { return zstd.NewWriter(w) }),
		"xz":    squeeze(func(w io.Writer) (io.WriteCloser, error) { return xz.NewWriter(w) }),
		"bzip2": bz,
	}
	for name, archive := range cases {
		f := newFS(t, 256<<20)
		if err := TarIn(f, bytes.NewReader(archive), "/", Options{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := "data"
		if name == "bzip2" {
			want = "hi\n"
		}
		if got := readFile(t, f, "/d/f"); string(got) != want {
			t.Fatalf("%s: /d/f holds %q", name, got)
		}
	}
	for name, in := range map[string][]byte{"empty": nil, "text": []byte(strings.Repeat("not a tar archive\n", 40))} {
		f := newFS(t, 256<<20)
		if err := TarIn(f, bytes.NewReader(in), "/", Options{}); !errors.Is(err, ErrNotTar) {
			t.Fatalf("%s input: %v, want ErrNotTar", name, err)
		}
	}
}
