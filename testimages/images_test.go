// Package testimages holds frozen images of every format version; every
// one must still open and check clean.
package testimages

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/check"
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
			fs, err := store.Open([]string{first}, volume.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer fs.Close()
			n := 0
			for it := fs.Tree(format.FSTree).First(); it.Valid(); it.Next() {
				want := fmt.Sprintf("item %d of the frozen image", n)
				if string(it.Item().Data) != want {
					t.Fatalf("item %d: %q", n, it.Item().Data)
				}
				n++
			}
			if n != 400 {
				t.Fatalf("%d items", n)
			}
		})
	}
}
