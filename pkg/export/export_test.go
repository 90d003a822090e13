package export

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
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
// image passes it. Both types.
func TestVerifyCatchesTheWriter(t *testing.T) {
	f := tree(t)
	for _, typ := range Types {
		out := filepath.Join(t.TempDir(), "x."+typ)
		st, err := Export(f, "/", out, Options{Type: typ})
		if err != nil || st.Entries != 4 || st.Bytes != 600006 {
			t.Fatalf("%s: %+v %v", typ, st, err)
		}
		b, err := os.ReadFile(out)
		must(t, err)
		// The random file is most of the image: a byte in its middle.
		b[len(b)/2] ^= 0xff
		must(t, os.WriteFile(out, b, 0o644))
		if _, err := verify(f, "/", out); !errors.Is(err, ErrMismatch) {
			t.Fatalf("%s: a changed image passed the check: %v", typ, err)
		}
	}
}
