package foreign

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestISORelocated: genisoimage -R moves directories past 8 deep to
// rr_moved, leaving a CL record in their place and an RE mark on the
// moved one: the tree reads as made, rr_moved hidden.
func TestISORelocated(t *testing.T) {
	needTools(t, "genisoimage")
	src := filepath.Join(t.TempDir(), "src")
	deep := src
	for i := range 12 {
		deep = filepath.Join(deep, fmt.Sprintf("level%02d", i))
	}
	must(t, os.MkdirAll(deep, 0o755))
	must(t, os.WriteFile(filepath.Join(deep, "leaf"), []byte("twelve deep"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "top"), []byte("top"), 0o644))
	img := filepath.Join(t.TempDir(), "x.iso")
	run(t, "genisoimage", "-quiet", "-R", "-o", img, src)
	im, err := Open(img)
	must(t, err)
	defer im.Close()
	// rr_moved stays, empty, as the kernel and xorriso show it.
	var names []string
	ents, err := im.ReadDir("/")
	must(t, err)
	for _, e := range ents {
		names = append(names, e.Name)
	}
	if fmt.Sprint(names) != "[level00 rr_moved top]" {
		t.Fatalf("root: %v", names)
	}
	if moved, err := im.ReadDir("/rr_moved"); err != nil || len(moved) != 0 {
		t.Fatalf("rr_moved: %d entries, %v", len(moved), err)
	}
	p := ""
	for i := range 12 {
		p += fmt.Sprintf("/level%02d", i)
		st, err := im.Lstat(p)
		if err != nil || !st.IsDir() || st.Mode&0o777 != 0o755 {
			t.Fatalf("%s: %+v %v", p, st, err)
		}
	}
	r, err := im.Open(p + "/leaf")
	must(t, err)
	b, err := io.ReadAll(struct{ io.Reader }{r})
	if err != nil || string(b) != "twelve deep" {
		t.Fatalf("leaf: %q %v", b, err)
	}
}

// countingReader counts reads of a byte image.
type countingReader struct {
	r     *bytes.Reader
	reads int
}

func (c *countingReader) ReadAt(b []byte, off int64) (int, error) {
	c.reads++
	return c.r.ReadAt(b, off)
}

// TestISOContinuationBounded: a System Use area of CE entries that all
// name an area made of the same (a fan-out that would read 10^13 areas)
// is refused after a few reads: one CE per area is followed, at most
// isoMaxCEHops areas a record.
func TestISOContinuationBounded(t *testing.T) {
	img := make([]byte, 8*isoBlock)
	area := img[2*isoBlock : 3*isoBlock]
	for at := 0; at+28 <= len(area); at += 28 {
		e := area[at : at+28]
		copy(e, "CE")
		e[2], e[3] = 28, 1
		binary.LittleEndian.PutUint32(e[4:], 2)         // this block
		binary.LittleEndian.PutUint32(e[12:], 0)        // from its start
		binary.LittleEndian.PutUint32(e[20:], isoBlock) // all of it
	}
	c := &countingReader{r: bytes.NewReader(img)}
	im := &Image{name: "x.iso", kind: ISO9660, be: &roBackend{r: c, size: int64(len(img))}}
	var r isoRecord
	_, err := im.isoSUSP(area, &r)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a continuation loop: %v", err)
	}
	if c.reads > isoMaxCEHops {
		t.Fatalf("%d reads for one record", c.reads)
	}
}
