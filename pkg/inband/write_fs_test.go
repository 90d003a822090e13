package inband_test

import (
	"bytes"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestDedupeWriteRuns: one write of blocks A B A C C D plus a partial
// tail stores A, B, C, D and the tail once each (repeats inside the write
// share the block written just before), the new blocks of a run lie back
// to back on disk, the data reads back and fsck is clean.
func TestDedupeWriteRuns(t *testing.T) {
	for _, s := range []format.Settings{
		{Dedupe: true},
		{Dedupe: true, DedupeVerify: true},
		{Dedupe: true, Compression: format.CompressS2},
	} {
		f, _ := newDedupeFS(t, s)
		const bs = 128 << 10
		a, b, c, d := rnd(21, bs), rnd(22, bs), rnd(23, bs), rnd(24, bs)
		if s.Compression != format.CompressNone {
			a = bytes.Repeat([]byte("compressible A "), bs/15+1)[:bs]
		}
		data := bytes.Join([][]byte{a, b, a, c, c, d, rnd(25, 1000)}, nil)
		in := write(t, f, "/x", data)
		if f.DedupeHits() != 2 {
			t.Fatalf("%+v: %d hits, want 2", s, f.DedupeHits())
		}
		if err := f.Sync(); err != nil { // extents reads the committed tree
			t.Fatal(err)
		}
		xs, err := extents(f, in.Ino, 0, in.Size)
		if err != nil || len(xs) != 7 {
			t.Fatalf("%+v: %d extents, %v", s, len(xs), err)
		}
		if xs[2].DiskLogical != xs[0].DiskLogical || xs[4].DiskLogical != xs[3].DiskLogical {
			t.Fatalf("%+v: repeats not shared: %+v", s, xs)
		}
		if s.Compression == format.CompressNone && xs[1].DiskLogical != xs[0].DiskLogical+bs {
			t.Fatalf("%+v: B at %d, not right after A at %d", s, xs[1].DiskLogical, xs[0].DiskLogical)
		}
		if !bytes.Equal(readAll(t, f, "/x"), data) {
			t.Fatalf("%+v: data differs", s)
		}
		atClean(t, f)
	}
}
