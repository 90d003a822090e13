package e2e

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gunzipTo unpacks a frozen damaged image into dir.
func gunzipTo(t *testing.T, gz, dst string) {
	t.Helper()
	f, err := os.Open(gz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, io.LimitReader(zr, 256<<20)); err != nil {
		t.Fatal(err)
	}
	out.Close()
}

// TestTrimKeepsDisputedSpace (issue 36): on an image whose extent tree
// lost the EXTENT_ITEM of a file's data, or the METADATA_ITEM of a live
// node, trimtool used to punch holes over live data and exit 0. Now it
// trims what both the extent tree and the trees call free, names the
// rest and exits 4; every file reads back as before.
func TestTrimKeepsDisputedSpace(t *testing.T) {
	for _, kind := range []string{"extent-item-deleted", "metadata-item-leaked"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			gunzipTo(t, filepath.Join("..", "testimages", "damaged", kind+".1.img.gz"), filepath.Join(dir, "d.img"))
			before := must(t, run(t, dir, "ddfs", "tar-out", "d.img"), 0).stdout
			r := run(t, dir, "trimtool", "-v", "d.img")
			if kind == "extent-item-deleted" && (r.code != 4 || !strings.Contains(r.stderr, "in use but the extent tree calls it free")) {
				t.Fatalf("trimtool: exit %d, want 4 naming the disputed range\n%s", r.code, r.stderr)
			}
			after := must(t, run(t, dir, "ddfs", "tar-out", "d.img"), 0).stdout
			if after != before {
				t.Fatalf("the image reads back differently after trimtool (exit %d: %s)", r.code, r.stderr)
			}
		})
	}
}
