package foreign

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// sqTableAt parses table b (an attribute table made at offset 0) whose
// id header is the last 16 + 8 x blocks bytes.
func sqTableAt(b []byte, n int) ([][]Xattr, error) {
	t := &sqTable{r: bytes.NewReader(b), size: int64(len(b)), codec: 1}
	return t.sets(uint64(len(b) - 16 - 8*sqBlocks(16*n)))
}

// TestSqTableBounds: the made-up table parses (each set its index); a
// header of no sets, id blocks named twice or out of order, and a set
// of no pairs are refused; many ids naming one set decode it once.
func TestSqTableBounds(t *testing.T) {
	le := binary.LittleEndian
	const n = 600 // two id blocks
	good := sqFakeTable(0, n)
	sets, err := sqTableAt(good, n)
	if err != nil || len(sets) != n {
		t.Fatalf("%d sets, %v", len(sets), err)
	}
	for i, s := range sets {
		if len(s) != 1 || s[0].Name != "user."+sqXattrIDKey || le.Uint32(s[0].Value) != uint32(i) {
			t.Fatalf("set %d: %+v", i, s)
		}
	}
	hdr := len(good) - 16 - 8*2
	for name, mutate := range map[string]func(b []byte){
		"no sets":        func(b []byte) { le.PutUint32(b[hdr+8:], 0) },
		"id block twice": func(b []byte) { copy(b[hdr+24:hdr+32], b[hdr+16:hdr+24]) },
		"id blocks swapped": func(b []byte) {
			x := le.Uint64(b[hdr+16:])
			le.PutUint64(b[hdr+16:], le.Uint64(b[hdr+24:]))
			le.PutUint64(b[hdr+24:], x)
		},
		"a set of no pairs": func(b []byte) { le.PutUint32(b[le.Uint64(b[hdr+16:])+2+8:], 0) },
	} {
		b := append([]byte(nil), good...)
		mutate(b)
		if _, err := sqTableAt(b, n); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Every id naming set 0's pairs: one decoding, shared.
	b := append([]byte(nil), good...)
	ids := b[le.Uint64(b[hdr+16:])+2:]
	for i := 1; i < 512; i++ {
		copy(ids[16*i:16*i+16], ids[:16])
	}
	sets, err = sqTableAt(b, n)
	if err != nil || &sets[1][0] != &sets[0][0] {
		t.Fatalf("ids naming one set: shared %v, %v", len(sets) > 1 && &sets[1][0] == &sets[0][0], err)
	}
}

// TestSquashfsLZ4Refused: go-diskfs cannot read lz4 squashfs (it takes
// raw lz4 blocks for frames); opening one says so, naming the image,
// rather than calling it corrupt.
func TestSquashfsLZ4Refused(t *testing.T) {
	needTools(t, "mksquashfs")
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(src, 0o755))
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("a"), 0o644))
	img := filepath.Join(t.TempDir(), "x.sqfs")
	if out, err := exec.Command("mksquashfs", src, img, "-quiet", "-noappend", "-no-progress", "-comp", "lz4").CombinedOutput(); err != nil {
		t.Skipf("mksquashfs -comp lz4: %v %s", err, out)
	}
	_, err := Open(img)
	if !errors.Is(err, ErrUnsupported) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), img) || !strings.Contains(err.Error(), "lz4") {
		t.Fatalf("open of an lz4 squashfs: %v", err)
	}
}

// TestSquashfsBombsRefused: images an audit of go-diskfs's allocations
// crafted (testdata/hostile): an id table block that is a zstd frame of
// 16 GiB (go-diskfs's DecodeAll allocated 1 GiB for it), a fragment of
// 2 MiB whose frame claims 60 GiB (go-diskfs ended the process: "out of
// memory"), an xz block asking for a 4 GiB dictionary (allocated). Each
// is refused as corrupt, reading it whole allocating under 64 MiB.
func TestSquashfsBombsRefused(t *testing.T) {
	for _, name := range []string{"s_zbomb", "s_fragbomb", "sx_dict"} {
		f, err := os.Open(filepath.Join("testdata", "hostile", name+".img.gz"))
		must(t, err)
		zr, err := gzip.NewReader(f)
		must(t, err)
		img, err := io.ReadAll(zr)
		f.Close()
		must(t, err)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		im, err := OpenReader(name, bytes.NewReader(img), int64(len(img)))
		if err == nil {
			_, err = im.ReadDir("/")
			if err == nil {
				var r *File
				if r, err = im.Open("/a.txt"); err == nil {
					_, err = io.ReadAll(struct{ io.Reader }{r})
				}
			}
		}
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrCorrupt) || after.TotalAlloc-before.TotalAlloc > 64<<20 {
			t.Errorf("%s: %v after allocating %d bytes", name, err, after.TotalAlloc-before.TotalAlloc)
		}
	}
}

// TestSquashfsCodecsReadBack: real trees (Go sources: text that zstd at
// mksquashfs's default level 15 cuts into many small blocks per
// fragment) made with each codec and block size read back byte for
// byte: the bomb checks (sqbomb.go) refuse no payload a real writer
// makes. A first version counted each of a frame's blocks at its
// window and refused 226 of 400 files of /usr/share/doc.
func TestSquashfsCodecsReadBack(t *testing.T) {
	needTools(t, "mksquashfs")
	src := filepath.Join(runtime.GOROOT(), "src", "go", "types")
	for _, args := range [][]string{
		{"-comp", "zstd"}, {"-comp", "zstd", "-Xcompression-level", "22", "-b", "1M"}, {"-comp", "zstd", "-b", "4K"},
		{"-comp", "xz"}, {"-comp", "xz", "-Xbcj", "x86", "-b", "1M"}, {"-comp", "lzma"}, {"-comp", "gzip", "-b", "4K"},
	} {
		img := filepath.Join(t.TempDir(), "x.sq")
		cmd := exec.Command("mksquashfs", append([]string{src, img, "-quiet", "-noappend", "-no-progress"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("%v: mksquashfs: %v %s (codec not built in?)", args, err, out)
			continue
		}
		im, err := Open(img)
		must(t, err)
		ents, err := im.ReadDir("/")
		must(t, err)
		n := 0
		for _, e := range ents {
			if !e.IsRegular() {
				continue
			}
			f, err := im.Open("/" + e.Name)
			must(t, err)
			got, err := io.ReadAll(struct{ io.Reader }{f})
			f.Close()
			want, _ := os.ReadFile(filepath.Join(src, e.Name))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%v: %s: %d bytes (%v), want %d", args, e.Name, len(got), err, len(want))
			}
			n++
		}
		im.Close()
		if n < 20 {
			t.Fatalf("%v: read %d files", args, n)
		}
	}
}

// TestSquashfsDataBlockBomb: a file's first data block (zstd, about half
// of 128 KiB: hex digits) whose frame header is made to claim 60 GiB is
// refused when the file is read, the inode's block list naming it a
// compressed block (through the export table); go-diskfs's DecodeAll
// allocated 32768 times its length (2 GiB) for it. A file stored raw
// that starts with such a header (a .zst file) still reads; a is opened
// before it and read after (each file's blocks go with the file).
func TestSquashfsDataBlockBomb(t *testing.T) {
	needTools(t, "mksquashfs")
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(src, 0o755))
	hex := make([]byte, 256<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range hex {
		hex[i] = "0123456789abcdef"[rng.IntN(16)]
	}
	must(t, os.WriteFile(filepath.Join(src, "a"), hex, 0o644))
	// 8-byte content size, a 1 KiB window (a window this size is within
	// the decoder's limits: it sizes its output by the content size)
	bomb := append([]byte("\x28\xb5\x2f\xfd\xc0\x00"), binary.LittleEndian.AppendUint64(nil, 60<<30)...)
	must(t, os.WriteFile(filepath.Join(src, "b.zst"), bomb, 0o644))
	img := filepath.Join(t.TempDir(), "x.sq")
	run(t, "mksquashfs", src, img, "-quiet", "-noappend", "-no-progress", "-comp", "zstd", "-no-fragments")
	b, err := os.ReadFile(img)
	must(t, err)
	const first = 96 // mksquashfs writes the data blocks right after the superblock, a's first
	if !bytes.HasPrefix(b[first:], []byte("\x28\xb5\x2f\xfd")) {
		t.Fatalf("no zstd frame at %d: % x", first, b[first:first+8])
	}
	copy(b[first+4:], bomb[4:])
	im, err := OpenReader("x.sq", bytes.NewReader(b), int64(len(b)))
	must(t, err)
	a, err := im.Open("/a") // opened first, read after another file: its own blocks are checked
	must(t, err)
	got, err := readAllOf(im, "/b.zst")
	if err != nil || !bytes.Equal(got, bomb) {
		t.Fatalf("b.zst: %q %v", got, err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = io.ReadAll(struct{ io.Reader }{a})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorrupt) || after.TotalAlloc-before.TotalAlloc > 64<<20 {
		t.Fatalf("a: %v after allocating %d bytes", err, after.TotalAlloc-before.TotalAlloc)
	}
}

// readAllOf is the bytes of im's file p.
func readAllOf(im *Image, p string) ([]byte, error) {
	f, err := im.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(struct{ io.Reader }{f})
}

// TestSquashfsSparseBlockList: a sparse file's block list (4096 entries
// of 4 KiB blocks: 16 KiB, over several metadata blocks, the image far
// smaller, one entry split across two of them) is read a metadata block
// at a time: the file reads back, and its one compressed block, at the
// list's end, is still checked (its frame header made to claim 60 GiB:
// refused). A first version bounded the list by the image's size and
// refused to open the file.
func TestSquashfsSparseBlockList(t *testing.T) {
	needTools(t, "mksquashfs")
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(src, 0o755))
	rng := rand.New(rand.NewPCG(3, 4))
	tail := make([]byte, 4096)
	for i := range tail {
		tail[i] = "0123456789abcdef"[rng.IntN(16)]
	}
	want := make([]byte, 16<<20)
	copy(want[len(want)-len(tail):], tail)
	// a 25-byte symlink inode first: s's list starts off a 4-byte
	// boundary, so an entry runs across two metadata blocks
	must(t, os.Symlink("x", filepath.Join(src, "a")))
	f, err := os.Create(filepath.Join(src, "s"))
	must(t, err)
	must(t, f.Truncate(int64(len(want))))
	_, err = f.WriteAt(tail, int64(len(want)-len(tail)))
	must(t, err)
	must(t, f.Close())
	img := filepath.Join(t.TempDir(), "x.sq")
	run(t, "mksquashfs", src, img, "-quiet", "-noappend", "-no-progress", "-comp", "zstd", "-b", "4096", "-no-fragments")
	b, err := os.ReadFile(img)
	must(t, err)
	im, err := OpenReader("x.sq", bytes.NewReader(b), int64(len(b)))
	must(t, err)
	got, err := readAllOf(im, "/s")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("s: %d bytes (%v), equal %v", len(got), err, bytes.Equal(got, want))
	}
	const first = 96 // the one data block, right after the superblock
	if !bytes.HasPrefix(b[first:], []byte("\x28\xb5\x2f\xfd")) {
		t.Fatalf("no zstd frame at %d: % x", first, b[first:first+8])
	}
	copy(b[first+4:], append([]byte{0xc0, 0}, binary.LittleEndian.AppendUint64(nil, 60<<30)...))
	im, err = OpenReader("x.sq", bytes.NewReader(b), int64(len(b)))
	must(t, err)
	if _, err := readAllOf(im, "/s"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("s with a 60 GiB frame header: %v", err)
	}
}
