package send

import (
	"bytes"
	"errors"
	"testing"

	"github.com/klauspost/compress/s2"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// records counts the records of type typ in stream.
func records(t *testing.T, stream []byte, typ format.RecordType) (n int) {
	restream(t, stream, func(r *format.Record) {
		if r.Type == typ {
			n++
		}
	})
	return n
}

// TestCompressedData: from an image that compresses, --compressed-data
// sends ENCODED records, a stream far smaller than the decompressed one,
// that make snapshots equal entry by entry to the sent ones, full and
// incremental, in images with and without compression, fsck clean (a
// receiver that compresses as the sender did stores the frames as sent);
// an
// ENCODED record whose frame does not decompress whole, says another
// length than it has, or claims another decompressed size is refused with the target
// left without a snapshot.
func TestCompressedData(t *testing.T) {
	src, _ := newFS(t, 1, format.Settings{Compression: format.CompressZstd, CompressionLevel: 1})
	populate(t, src)
	text := bytes.Repeat([]byte("a line of text that compresses well\n"), 30000)
	in, err := src.Create("/text", fsys.Attr{Mode: 0o644})
	must(t, err)
	must(t, src.WriteAt(in, text, 0))
	must(t, src.Sync())
	_, err = src.CreateSnapshot("s1")
	must(t, err)
	changeTree(t, src, 0)
	must(t, src.WriteAt(in, bytes.Repeat([]byte("changed "), 5000), 300000))
	must(t, src.Sync())
	_, err = src.CreateSnapshot("s2")
	must(t, err)

	on := SendOptions{CompressedData: true}
	plain, full := snapStream(t, src, "s1", ""), snapStreamWith(t, src, "s1", "", on)
	incr := snapStreamWith(t, src, "s2", "s1", on)
	if n := records(t, full, format.RecEncoded); n < 8 || len(full) > len(plain)-len(text)*3/4 {
		t.Fatalf("%d ENCODED records; stream %d bytes, %d without --compressed-data", n, len(full), len(plain))
	}
	if records(t, incr, format.RecEncoded) == 0 || records(t, plain, format.RecEncoded) != 0 {
		t.Fatal("ENCODED records: none in the incremental stream, or some without the option")
	}
	for _, s := range []format.Settings{{}, {Compression: format.CompressS2}, {Compression: format.CompressZstd, CompressionLevel: 9}} {
		dst, d := newFS(t, 2, s)
		for _, st := range [][]byte{full, incr} {
			if _, _, _, err := Receive(dst, bytes.NewReader(st)); err != nil {
				t.Fatal(err)
			}
		}
		sameSnapshots(t, src, dst, "s1", "s2")
		if s.Compression == format.CompressZstd {
			sameFrames(t, src, dst, "s1", "/text")
		}
		must(t, dst.Sync())
		fsckClean(t, d)
	}

	for name, edit := range map[string]func(r *format.Record){
		"frame byte":   func(r *format.Record) { r.Data[len(r.Data)/2] ^= 0x55 },
		"frame length": func(r *format.Record) { r.Data[0]-- },
		"frame padded": func(r *format.Record) { r.Data = append(r.Data, 0) }, // decodes, but is not the frame
		"ram bytes":    func(r *format.Record) { r.RAMBytes++ },
		"codec":        func(r *format.Record) { r.Compression = format.CompressS2 },
	} {
		done := false
		bad := restream(t, full, func(r *format.Record) {
			if r.Type == format.RecEncoded && !done {
				edit(r)
				done = true
			}
		})
		dst, d := newFS(t, 3, format.Settings{})
		if _, _, _, err := Receive(dst, bytes.NewReader(bad)); !errors.Is(err, ErrStream) {
			t.Fatalf("%s: accepted (%v)", name, err)
		}
		if snaps, _ := dst.Snapshots(); len(snaps) != 0 {
			t.Fatalf("%s: snapshots %v", name, snaps)
		}
		must(t, dst.Sync())
		fsckClean(t, d)
	}
}

// sameFrames checks that file p of snapshot name is stored in the same
// compressed frames in both images: the receiver kept what was sent
// (its own compression, at another level, would have made others).
func sameFrames(t *testing.T, a, b *fsys.FS, name, p string) {
	t.Helper()
	frames := func(f *fsys.FS) (out [][]byte) {
		v, err := f.OpenSnapshot(name)
		must(t, err)
		defer v.Close()
		in, err := v.Resolve(p, false)
		must(t, err)
		ps, err := v.Pieces(in, fsys.Range{Len: in.Size})
		must(t, err)
		for _, pc := range ps {
			if pc.Compression == format.CompressNone {
				t.Fatalf("%s: %+v not compressed", p, pc)
			}
			fr, err := v.ReadStored(pc, make([]byte, pc.DiskLen))
			must(t, err)
			out = append(out, fr)
		}
		return out
	}
	fa, fb := frames(a), frames(b)
	if len(fa) < 2 || len(fa) != len(fb) {
		t.Fatalf("%s: %d frames sent, %d received", p, len(fa), len(fb))
	}
	for i := range fa {
		if !bytes.Equal(fa[i], fb[i]) {
			t.Fatalf("%s: frame %d of %d bytes stored as %d other bytes", p, i, len(fa[i]), len(fb[i]))
		}
	}
}

// s2Block is the s2 block of s.
func s2Block(s string) []byte { return s2.Encode(nil, []byte(s)) }
