package export

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func tree(t *testing.T) *fsys.FS {
	d := device.NewMemDevice("m", 256<<20)
	st, tx, err := store.CreateTx(store.CreateParams{FSID: [16]byte{3}, Csum: format.CsumCRC32C, NodeSize: 16384, SectorSize: 4096,
		Data: format.ProfileSingle, Metadata: format.ProfileDup, Devices: []store.NewDevice{{Dev: d, Path: "m"}}})
	must(t, err)
	f, err := fsys.New(st, fsys.Options{Now: func() time.Time { return time.Unix(1700000000, 0) }})
	must(t, err)
	f.Adopt(tx)
	must(t, f.InitRoot(fsys.Attr{Mode: 0o755}))
	_, err = f.Mkdir("/d", fsys.Attr{Mode: 0o755})
	must(t, err)
	big := make([]byte, 600000)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	in, err := f.Create("/d/big", fsys.Attr{Mode: 0o644})
	must(t, err)
	must(t, f.WriteAt(in, big, 0))
	in, err = f.Create("/small", fsys.Attr{Mode: 0o600})
	must(t, err)
	must(t, f.WriteAt(in, []byte("small\n"), 0))
	_, err = f.Symlink("d/big", "/link", fsys.Attr{})
	must(t, err)
	must(t, f.Sync())
	return f
}

// TestVerifyCatchesTheWriter: an image that does not read back as the
// tree (a byte of the file data changed after the writer finished, as a
// writer bug would leave it) fails the read-back check; the untouched
// image passes it. Every type (FAT on the tree without its symlink).
func TestVerifyCatchesTheWriter(t *testing.T) {
	f := tree(t)
	in, err := f.Resolve("/d/big", true)
	must(t, err)
	big := make([]byte, in.Size)
	_, err = f.ReadAt(in, big, 0)
	must(t, err)
	for _, typ := range Types {
		entries := uint64(4)
		if typ == "fat32" {
			must(t, f.Remove("/link"))
			entries = 3
		}
		out := filepath.Join(t.TempDir(), "x."+typ)
		st, err := Export(f, "/", out, Options{Type: typ})
		if err != nil || st.Entries != entries || st.Bytes != 600006 {
			t.Fatalf("%s: %+v %v", typ, st, err)
		}
		b, err := os.ReadFile(out)
		must(t, err)
		// A byte in the middle of the random file's data (stored as
		// is: random bytes do not compress).
		at := bytes.Index(b, big[300000:300064])
		if at < 0 {
			t.Fatalf("%s: the file's bytes are not in the image", typ)
		}
		b[at+10] ^= 0xff
		must(t, os.WriteFile(out, b, 0o644))
		if _, err := verify(f, "/", out); !errors.Is(err, ErrMismatch) {
			t.Fatalf("%s: a changed image passed the check: %v", typ, err)
		}
	}
}

// FAT32: long and mixed-case names, nested directories, an empty file
// and a big one read back equal; what FAT cannot keep (a symlink, two
// names that differ only in case, a name FAT would change) and a --size
// too small are refused naming the path, and leave no OUT.
func TestExportFAT(t *testing.T) {
	f := tree(t)
	must(t, f.Remove("/link"))
	_, err := f.Mkdir("/d/A Long Directory Name, Mixed Case", fsys.Attr{Mode: 0o755})
	must(t, err)
	_, err = f.Create("/d/A Long Directory Name, Mixed Case/empty.file.txt", fsys.Attr{Mode: 0o644})
	must(t, err)
	must(t, f.Sync())
	out := filepath.Join(t.TempDir(), "x.fat")
	st, err := Export(f, "/", out, Options{Type: "fat32", Label: "EFI"})
	if err != nil || st.Entries != 5 || st.Bytes != 600006 {
		t.Fatalf("%+v %v", st, err)
	}
	if fi, err := os.Stat(out); err != nil || fi.Size() != fatMinSize {
		t.Fatalf("size: %v %v, want the 64 MiB floor", fi, err)
	}
	// fsck.fat finds it clean: at 64 MiB go-diskfs's FAT maps two
	// clusters fewer than its boot sector counts (fatFix cuts the count).
	if _, err := exec.LookPath("fsck.vfat"); err == nil {
		if b, err := exec.Command("fsck.vfat", "-n", out).CombinedOutput(); err != nil {
			t.Fatalf("fsck.vfat -n: %v\n%s", err, b)
		}
	}

	for _, tc := range []struct {
		name  string
		setup func()
		size  int64
		want  error
		path  string
	}{
		{"too small", func() {}, 32 << 20, syscall.ENOSPC, "--size"},
		{"case twins", func() { _, err := f.Create("/D", fsys.Attr{Mode: 0o644}); must(t, err) }, 0, syscall.EEXIST, "/D"},
		{"trailing dot", func() { must(t, f.Remove("/D")); _, err := f.Create("/d/x.", fsys.Attr{Mode: 0o644}); must(t, err) }, 0, syscall.EINVAL, "/d/x."},
		{"colon", func() { must(t, f.Remove("/d/x.")); _, err := f.Create("/d/a:b", fsys.Attr{Mode: 0o644}); must(t, err) }, 0, syscall.EINVAL, "/d/a:b"},
		{"symlink", func() { must(t, f.Remove("/d/a:b")); _, err := f.Symlink("big", "/d/l", fsys.Attr{}); must(t, err) }, 0, syscall.EOPNOTSUPP, "/d/l"},
		{"8.3 twins", func() { // both H.GO: go-diskfs writes one over the other
			must(t, f.Remove("/d/l"))
			for _, p := range []string{"/d/h.go", "/d/.h.go"} {
				_, err := f.Create(p, fsys.Attr{Mode: 0o644})
				must(t, err)
			}
		}, 0, syscall.EEXIST, "h.go"},
	} {
		tc.setup()
		out := filepath.Join(t.TempDir(), "y.fat")
		_, err := Export(f, "/", out, Options{Type: "fat32", Size: tc.size})
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("%s: %v, want %v naming %s", tc.name, err, tc.want, tc.path)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: a refused export left %s", tc.name, out)
		}
	}
}

// With SOURCE_DATE_EPOCH, two exports of one tree a second apart are the
// same bytes: squashfs (the superblock's time stamped, the workspace
// root's times set), FAT32, and ISO 9660 (the volume descriptors' dates
// and Rock Ridge's change times stamped after the write).
func TestExportReproducible(t *testing.T) {
	f := tree(t)
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	images := map[string][][]byte{}
	for i := range 2 {
		if i == 1 {
			// The check means something only once the clock's second
			// has moved on: wait for that, not for a guessed time.
			for s := time.Now().Unix(); time.Now().Unix() == s; {
				time.Sleep(10 * time.Millisecond)
			}
		}
		for _, typ := range []string{"squashfs", "iso9660", "fat32"} {
			if typ == "fat32" {
				must(t, f.Remove("/link"))
			}
			o := filepath.Join(t.TempDir(), "r")
			_, err := Export(f, "/", o, Options{Type: typ})
			must(t, err)
			b, err := os.ReadFile(o)
			must(t, err)
			images[typ] = append(images[typ], b)
			if typ == "fat32" {
				_, err := f.Symlink("d/big", "/link", fsys.Attr{})
				must(t, err)
			}
		}
	}
	for typ, b := range images {
		if !bytes.Equal(b[0], b[1]) {
			t.Errorf("%s: two exports under SOURCE_DATE_EPOCH differ", typ)
		}
	}
}
