// Package testimages holds frozen images of every format version; every
// one must still open and check clean.
package testimages

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

func TestFrozenImagesOpenAndCheckClean(t *testing.T) {
	dir := t.TempDir()
	imgs := unpack(t, dir)
	sets := map[string]bool{}
	for _, img := range imgs {
		sets[strings.SplitN(filepath.Base(img), ".", 2)[0]] = true
	}
	for set := range sets {
		t.Run(set, func(t *testing.T) {
			first := filepath.Join(dir, set+".1.img")
			rep, err := check.Check([]string{first}, check.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Clean() || rep.Devices != 2 || rep.Nodes < 4 {
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
			for i := 0; i < 300; i++ {
				in, err := f.Resolve(fmt.Sprintf("/d/f%03d", i), true)
				if err != nil {
					t.Fatal(err)
				}
				want := content(i % 5)
				got := make([]byte, in.Size)
				if _, err := f.ReadAt(in, got, 0); err != nil && err != io.EOF {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) || in.UID != 1000 || in.Mode != 0o100644 {
					t.Fatalf("/d/f%03d: %d bytes, uid %d, mode %o", i, len(got), in.UID, in.Mode)
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
		})
	}
}

// content mirrors gen.Content (package main cannot be imported).
func content(i int) []byte {
	b := make([]byte, 3000+i*1000)
	for j := range b {
		b[j] = byte(i + j*7)
	}
	return b
}
