package transfer

import (
	"archive/tar"
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// archiveTarHeader is what archive/tar writes for h (the header blocks,
// with the extended header's padding).
func archiveTarHeader(h *tar.Header) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	c := *h
	err := tw.WriteHeader(&c)
	return b.Bytes(), err // no data written: the header blocks are all there is
}

// TestAppendPAXHeaderMatches: for random headers of the kinds tar-out
// writes, appendPAXHeader gives archive/tar's bytes exactly, or declines.
func TestAppendPAXHeaderMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "dir/", "d/e/f.go", "x/PaxHeaders.0", strings.Repeat("n", 100), strings.Repeat("m", 99) + "/", strings.Repeat("p/", 40) + "q",
		"sp ace", "é", strings.Repeat("z", 101), "t\x00"}
	ts := func() time.Time {
		switch r.IntN(12) {
		case 0:
			return time.Unix(r.Int64N(1<<33), 0)
		case 1:
			return time.Unix(r.Int64N(1<<31), r.Int64N(1e9))
		case 2:
			return time.Unix(-r.Int64N(1000), r.Int64N(1e9))
		case 3:
			return time.Unix(1<<33+r.Int64N(9), 0)
		}
		return time.Unix(r.Int64N(1<<31), r.Int64N(1000)*1000)
	}
	types := []byte{tar.TypeReg, tar.TypeDir, tar.TypeSymlink, tar.TypeLink, tar.TypeChar, tar.TypeFifo}
	fast := 0
	for i := range 20000 {
		h := &tar.Header{Format: tar.FormatPAX, Typeflag: types[r.IntN(len(types))], Name: names[r.IntN(len(names))],
			Mode: r.Int64N(1 << 21), Uid: r.IntN(70000), Gid: r.IntN(3000), ModTime: ts(), AccessTime: ts(), ChangeTime: ts()}
		if r.IntN(20) == 0 {
			h.Mode, h.Uid = 1<<21+r.Int64N(9), 1<<21+r.IntN(9) // past their octal fields
		}
		switch h.Typeflag {
		case tar.TypeReg:
			h.Size = r.Int64N(1 << 34)
		case tar.TypeSymlink, tar.TypeLink:
			h.Linkname = names[r.IntN(len(names))]
		case tar.TypeChar:
			h.Devmajor, h.Devminor = 8, 1
		}
		if r.IntN(4) == 0 {
			h.PAXRecords = map[string]string{"SCHILY.xattr.user.k": strings.Repeat("v", r.IntN(300)), "SCHILY.xattr.security.a\xff": "\x00\x01"}
		}
		got, ok := appendPAXHeader(nil, h)
		want, err := archiveTarHeader(h)
		if !ok {
			continue
		}
		fast++
		if err != nil {
			t.Fatalf("header %d %+v: archive/tar refuses it (%v), the fast path wrote it", i, h, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("header %d %+v:\n got %q\nwant %q", i, h, got, want)
		}
	}
	if fast < 2000 {
		t.Fatalf("only %d of 20000 headers took the fast path (want 2000)", fast)
	}
}
