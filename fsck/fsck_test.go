package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// image unpacks a corpus image (testimages/damaged) into a temp dir.
func image(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("../testimages/damaged", name+".1.img.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), name+".1.img")
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	out.Close()
	return dst
}

func fsck(t *testing.T, want int, args ...string) string {
	t.Helper()
	var o, e bytes.Buffer
	if got := run(args, &o, &e); got != want {
		t.Fatalf("fsck.ddfs %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, got, want, o.String(), e.String())
	}
	return o.String()
}

// TestExitCodes follows fsck(8): a dangling entry is left by -n and -p
// (4: removing it is not a preen fix), fixed by -y (1), then clean (0);
// link counts are a preen fix.
func TestExitCodes(t *testing.T) {
	img := image(t, "dangling-entry")
	fsck(t, 4, img)
	fsck(t, 4, "-n", img)
	fsck(t, 4, "-a", img)
	var rep struct {
		Problems []struct {
			Code  string `json:"code"`
			Pass  string `json:"pass"`
			Path  string `json:"path"`
			Fixed bool   `json:"fixed"`
			Copy  *int   `json:"copy"`
		} `json:"problems"`
	}
	if err := json.Unmarshal([]byte(fsck(t, 1, "-y", "--json", img)), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Code != "ENTRY_DANGLING" || rep.Problems[0].Pass != "fs" || !rep.Problems[0].Fixed ||
		rep.Problems[0].Path != "/" || rep.Problems[0].Copy != nil {
		t.Fatalf("-y: %+v", rep.Problems)
	}
	fsck(t, 0, img)
	img = image(t, "nlink-high")
	fsck(t, 1, "-p", "-f", img)
	fsck(t, 0, img)
	// Some fixed, some left: the sum.
	img = image(t, "mirror-data-single")
	fsck(t, 0, img) // the bad sector is found only by reading data
	fsck(t, 5, "-y", "--check-data", img)
	fsck(t, 4, "--check-data", img)
}

// TestUsage: conflicting modes and no device are usage errors (16);
// --list-codes needs no device.
func TestUsage(t *testing.T) {
	fsck(t, 16)
	fsck(t, 16, "-n", "-y", "x.img")
	fsck(t, 16, "-p", "--repair", "x.img")
	fsck(t, 16, "--bogus")
	if out := fsck(t, 0, "--list-codes"); !bytes.Contains([]byte(out), []byte("NODE_COPY_BAD")) {
		t.Fatalf("list: %s", out)
	}
}

// TestCancelled: SIGINT (a cancelled context) exits 32 and leaves the
// image as it was.
func TestCancelled(t *testing.T) {
	img := image(t, "nlink-high")
	before, _ := os.ReadFile(img)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var o, e bytes.Buffer
	if got := runContext(ctx, []string{"-y", img}, &o, &e); got != 32 {
		t.Fatalf("exit %d, want 32: %s", got, e.String())
	}
	if after, _ := os.ReadFile(img); !bytes.Equal(before, after) {
		t.Fatal("a cancelled repair changed the image")
	}
}
