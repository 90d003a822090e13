package foreign

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ddfs/ddfs/format"
)

var lookPath = exec.LookPath

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// smallImage builds a small image of kind k (for the fuzz seeds and the
// hostile tests), or skips naming the tool.
func smallImage(t testing.TB, k Kind) []byte { return smallExt(t, k, "metadata_csum") }

// smallExt is smallImage with the ext features given to mke2fs -O.
func smallExt(t testing.TB, k Kind, features string) []byte {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	for p, b := range map[string]string{"a": "hello\n", "d/b": "bee\n", "d/.b": "dot\n", "d/e/c": string(bytes.Repeat([]byte("c"), 5000))} {
		full := filepath.Join(src, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte(b), 0o644)
	}
	os.Symlink("../a", filepath.Join(src, "d/l"))
	if k == Squashfs { // xattrs, one out of line: the fuzzer reaches sqxattr.go
		unix.Setxattr(filepath.Join(src, "a"), "user.k", []byte("value"), 0)
		unix.Setxattr(filepath.Join(src, "d/b"), "trusted.t", bytes.Repeat([]byte{7}, 300), 0)
		unix.Setxattr(filepath.Join(src, "d/e/c"), "trusted.t", bytes.Repeat([]byte{7}, 300), 0)
	}
	if k == Ext4 { // a sparse file and xattrs: the fuzzer reaches extmap.go and extxattr.go
		unix.Setxattr(filepath.Join(src, "a"), "user.k", []byte("value"), 0)
		unix.Setxattr(filepath.Join(src, "d"), "trusted.t", bytes.Repeat([]byte{7}, 300), 0)
		s, _ := os.Create(filepath.Join(src, "d/s"))
		for i, at := range []int64{0, 20 << 10, 40 << 10} {
			s.WriteAt([]byte{byte('x' + i)}, at)
		}
		s.Close()
	}
	img := filepath.Join(dir, "x.img")
	var f *builder
	for i := range builders {
		if builders[i].kind == k && f == nil { // the first: the plain one
			f = &builders[i]
		}
	}
	for _, tool := range f.tools {
		if _, err := lookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	switch k {
	case Ext4:
		run(t, "mke2fs", "-q", "-F", "-t", "ext4", "-O", features, "-b", "1024", "-N", "32", "-d", src, img, "192K")
	case FAT12:
		os.Remove(filepath.Join(src, "d/l"))
		run(t, "mkfs.vfat", "-F", "12", "-C", img, "64")
		run(t, "mcopy", "-s", "-i", img, filepath.Join(src, "a"), filepath.Join(src, "d"), "::/")
	default:
		f.build(t, src, img)
	}
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// walkAll reads everything an image shows, bounded, as the commands do:
// the fuzz targets' body. Errors are fine; panics and hangs are not.
func walkAll(data []byte) {
	im, err := OpenReader("fuzz.img", bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return
	}
	im.Info()
	buf := make([]byte, 64<<10)
	seen := 0
	var walk func(p string, depth int)
	walk = func(p string, depth int) {
		ents, err := im.ReadDir(p)
		if err != nil || depth > 8 {
			return
		}
		for _, e := range ents {
			if seen++; seen > 256 {
				return
			}
			q := path.Join(p, e.Name)
			im.Stat(q)
			im.Xattrs(q, e)
			switch {
			case e.IsDir():
				walk(q, depth+1)
			case e.IsRegular():
				if f, err := im.Open(q); err == nil {
					for i := 0; i < 64; i++ { // at most 4 MiB a file
						if _, err := f.Read(buf); err != nil {
							break
						}
					}
					f.Close()
				}
			}
		}
	}
	walk("/", 0)
}

func fuzzFormat(f *testing.F, k Kind) {
	f.Add(smallImage(f, k))
	f.Fuzz(func(t *testing.T, data []byte) { walkAll(data) })
}

// One fuzz target per format, each seeded with a small real image:
// whatever the bytes, reading them must not panic or hang.
func FuzzExt4(f *testing.F) {
	f.Add(smallExt(f, Ext4, "metadata_csum,inline_data")) // extdir.go's reader
	fuzzFormat(f, Ext4)
}
func FuzzSquashfs(f *testing.F) { fuzzFormat(f, Squashfs) }
func FuzzISO9660(f *testing.F)  { fuzzFormat(f, ISO9660) }
func FuzzFAT(f *testing.F)      { fuzzFormat(f, FAT12) }

// TestFATLoopRefused: a cluster chain that comes back to itself (go-diskfs
// would follow it forever) is refused at open.
func TestFATLoopRefused(t *testing.T) {
	img, _, fat := smallFAT(t)
	setFAT12(fat, 2, 2) // cluster 2 is the first file's; make it point to itself
	_, err := OpenReader("loop.img", bytes.NewReader(img), int64(len(img)))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a FAT chain looping on cluster 2 opened: %v", err)
	}
}

// smallFAT is smallImage's FAT12 image, its boot sector, and its first
// FAT (a slice of the image).
func smallFAT(t *testing.T) ([]byte, fatBPB, []byte) {
	img := smallImage(t, FAT12)
	p, ok := parseBPB(img)
	if !ok {
		t.Fatal("no BPB")
	}
	return img, p, img[p.reserved*p.bytesPerSector:]
}

// setFAT12 sets FAT12 entry i of fat to v.
func setFAT12(fat []byte, i int, v uint16) {
	w := binary.LittleEndian.Uint16(fat[i*3/2:])
	if i%2 == 1 {
		w = w&0x000f | v<<4
	} else {
		w = w&0xf000 | v&0xfff
	}
	binary.LittleEndian.PutUint16(fat[i*3/2:], w)
}

// TestFATChainPastDataArea: a cluster chain through the FAT's entries
// past the last cluster (go-diskfs follows it and sizes a directory's
// buffer by it: 2.7 GiB for a 40 KiB directory) is refused at open.
func TestFATChainPastDataArea(t *testing.T) {
	img, p, fat := smallFAT(t)
	last := int(p.clusters) + 1
	if (last+3)*3/2+2 > int(p.fatSectors*p.bytesPerSector) {
		t.Fatalf("a FAT of %d sectors holds no entry past cluster %d", p.fatSectors, last)
	}
	for _, c := range []struct{ at, to int }{{2, last + 1}, {last + 1, last + 2}, {last + 2, 0xff7 - 1}} {
		bad := bytes.Clone(img)
		setFAT12(bad[p.reserved*p.bytesPerSector:], c.at, uint16(c.to))
		_, err := OpenReader("past.img", bytes.NewReader(bad), int64(len(bad)))
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("cluster %d chained to %d (the last is %d) opened: %v", c.at, c.to, last, err)
		}
	}
	setFAT12(fat, last+1, 0xfff) // an end mark past the data area names nothing: fine
	if _, err := OpenReader("end.img", bytes.NewReader(img), int64(len(img))); err != nil {
		t.Fatal(err)
	}
}

// TestFAT32SizeFields: a FAT32 boot sector with a 16-bit FAT size (ddfs
// checked that one) and a 32-bit one of 4 GiB (go-diskfs reads that:
// 12 GiB allocated, and the chains ddfs checked were not the ones it
// followed) is refused before go-diskfs allocates anything.
func TestFAT32SizeFields(t *testing.T) {
	needTools(t, "mkfs.vfat")
	path := filepath.Join(t.TempDir(), "f32.img")
	run(t, "mkfs.vfat", "-F", "32", "-C", path, "40000")
	img, err := os.ReadFile(path)
	must(t, err)
	if _, err := OpenReader("f32.img", bytes.NewReader(img), int64(len(img))); err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint16(img[22:], 630)
	binary.LittleEndian.PutUint32(img[36:], 0x7fffff)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = OpenReader("f32.img", bytes.NewReader(img), int64(len(img)))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorrupt) || after.TotalAlloc-before.TotalAlloc > 64<<20 {
		t.Fatalf("two FAT sizes: %v after allocating %d bytes", err, after.TotalAlloc-before.TotalAlloc)
	}
}

// TestTruncatedExtRefused: an ext image cut short is refused before
// go-diskfs sizes anything from its superblock.
func TestTruncatedExtRefused(t *testing.T) {
	img := smallImage(t, Ext4)
	_, err := OpenReader("cut.img", bytes.NewReader(img[:len(img)/2]), int64(len(img)/2))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("half an ext4 image opened: %v", err)
	}
}

// panicky panics on the reads after the first n: a stand-in for a
// go-diskfs bug on some input.
type panicky struct {
	r io.ReaderAt
	n int
}

func (p *panicky) ReadAt(b []byte, off int64) (int, error) {
	if p.n--; p.n < 0 {
		panic("boom")
	}
	return p.r.ReadAt(b, off)
}

// TestPanicContained: a panic below go-diskfs is an ErrCorrupt naming
// the image and path, never a crash.
func TestPanicContained(t *testing.T) {
	img := smallImage(t, Ext4)
	r := &panicky{r: bytes.NewReader(img), n: 1 << 30}
	im, err := OpenReader("p.img", r, int64(len(img)))
	if err != nil {
		t.Fatal(err)
	}
	r.n = 0
	_, err = im.ReadDir("/d")
	if !errors.Is(err, ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte("p.img:/d")) {
		t.Fatalf("a panic in a read: %v", err)
	}
}

// TestReadLoopBounded: a directory walk that reads one offset over and
// over (a loop in an extent tree) ends as ErrCorrupt.
func TestReadLoopBounded(t *testing.T) {
	b := &roBackend{r: bytes.NewReader(make([]byte, 4096)), size: 4096, name: "l.img"}
	im := &Image{name: "l.img", kind: Ext4, be: b}
	err := im.guard("read", "/x", func() error {
		p := make([]byte, 512)
		for {
			b.ReadAt(p, 0)
		}
	})
	if !errors.Is(err, ErrCorrupt) || b.read > (offsetRevisits+1)*512 {
		t.Fatalf("endless reads of one offset: %v after %d bytes", err, b.read)
	}
}

// TestDDFSWins: an image with a ddfs superblock is ddfs's, whatever
// foreign signature it also holds.
func TestDDFSWins(t *testing.T) {
	img := smallImage(t, Ext4)
	if k, err := Probe(bytes.NewReader(img), int64(len(img))); k != Ext4 || err != nil {
		t.Fatalf("the ext4 image probes as %q %v", k, err)
	}
	copy(img[int(format.SuperblockOffsets[0])+ddfsMagicOff:], format.SuperblockMagic)
	if k, err := Probe(bytes.NewReader(img), int64(len(img))); !errors.Is(err, ErrUnknown) {
		t.Fatalf("an image with a ddfs superblock probes as %q %v", k, err)
	}
}

// TestExtHoles: sparse files of ext4 (extent trees, one of depth 1),
// with 4 KiB and 1 KiB blocks, read back exactly, holes as zeros
// (go-diskfs v1.9.4 reads a hole from the wrong blocks: extmap.go reads
// them). go-diskfs reads no directory of an image without extents, so
// block maps are TestBlockMapRuns'.
func TestExtHoles(t *testing.T) {
	needTools(t, "mke2fs")
	src := filepath.Join(t.TempDir(), "src")
	os.MkdirAll(src, 0o755)
	want := map[string][]byte{}
	sparse := func(name string, size int, at ...int) {
		b := make([]byte, size)
		for i, a := range at {
			copy(b[a:], bytes.Repeat([]byte{byte(i + 1)}, min(3000, size-a)))
		}
		f, err := os.Create(filepath.Join(src, name))
		must(t, err)
		for i, a := range at {
			_, err := f.WriteAt(b[a:a+min(3000, size-a)], int64(a))
			must(t, err)
			_ = i
		}
		must(t, f.Truncate(int64(size)))
		f.Close()
		want["/"+name] = b
	}
	sparse("tail", 600<<10+3, 600<<10)  // a hole, then data to the end
	sparse("head", 2<<20, 0)            // data, then a hole to the end
	sparse("middle", 1<<20, 0, 900<<10) // data, hole, data
	var many []int
	for i := 0; i < 300; i++ {
		many = append(many, i*8192) // 300 extents: a tree of depth 1
	}
	sparse("many", 300*8192, many...)
	sparse("far", 70<<20, 0, 5<<20, 69<<20) // past the double indirect blocks of ext2
	for _, fs := range [][]string{{"-t", "ext4"}, {"-t", "ext4", "-b", "1024"}} {
		img := filepath.Join(t.TempDir(), "x.img")
		run(t, "mke2fs", append(append([]string{"-q", "-F"}, fs...), "-d", src, img, "32M")...)
		im, err := Open(img)
		must(t, err)
		for p, w := range want {
			f, err := im.Open(p)
			if err != nil {
				t.Fatalf("%v %s: %v", fs, p, err)
			}
			got, err := io.ReadAll(f)
			if err != nil || !bytes.Equal(got, w) {
				t.Fatalf("%v %s: %d bytes (%v), want %d, equal %v", fs, p, len(got), err, len(w), bytes.Equal(got, w))
			}
		}
		im.Close()
	}
}

// TestBlockMapRuns: an ext2/3 block map (direct, single and double
// indirect pointers, zeros for holes) becomes the runs it maps, cut at
// the file's size; a pointer outside the image is refused.
func TestBlockMapRuns(t *testing.T) {
	const bs = 1024
	img := make([]byte, 2048*bs)
	put := func(blk, i int, v uint32) { binary.LittleEndian.PutUint32(img[blk*bs+4*i:], v) }
	iblock := make([]byte, 60)
	binary.LittleEndian.PutUint32(iblock[0:], 100)  // block 0
	binary.LittleEndian.PutUint32(iblock[20:], 105) // block 5
	binary.LittleEndian.PutUint32(iblock[48:], 200) // single indirect: blocks 12..267
	binary.LittleEndian.PutUint32(iblock[52:], 201) // double indirect: 268..
	put(200, 0, 300)                                // block 12
	put(200, 3, 303)                                // block 15
	put(201, 1, 202)                                // blocks 268+256..
	put(202, 0, 400)                                // block 524
	put(202, 9, 409)                                // block 533: past the size
	w := &runWalk{r: bytes.NewReader(img), g: extGeom{bs: bs, blocks: 2048}, limit: 530}
	must(t, w.blockMap(iblock))
	want := []extRun{{0, 100, 1}, {5, 105, 1}, {12, 300, 1}, {15, 303, 1}, {524, 400, 1}}
	if fmt.Sprint(w.runs) != fmt.Sprint(want) {
		t.Fatalf("runs %v, want %v", w.runs, want)
	}
	put(202, 1, 5000) // outside the image
	w = &runWalk{r: bytes.NewReader(img), g: extGeom{bs: bs, blocks: 2048}, limit: 530}
	if err := w.blockMap(iblock); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a pointer outside the image: %v", err)
	}
}

// TestUnwrittenExtent: an unwritten extent (length above 32768) maps no
// blocks and reads as zeros, though its blocks hold bytes.
func TestUnwrittenExtent(t *testing.T) {
	const bs = 1024
	img := bytes.Repeat([]byte{0xAB}, 64*bs)
	node := make([]byte, 60)
	le := binary.LittleEndian
	le.PutUint16(node[0:], 0xF30A)
	le.PutUint16(node[2:], 2) // entries
	le.PutUint16(node[4:], 4) // max
	ext := func(i int, lblk uint32, n uint16, start uint32) {
		e := node[12+12*i:]
		le.PutUint32(e[0:], lblk)
		le.PutUint16(e[4:], n)
		le.PutUint32(e[8:], start)
	}
	ext(0, 0, 2, 10)       // written: blocks 10, 11
	ext(1, 2, 32768+2, 20) // unwritten
	w := &runWalk{r: bytes.NewReader(img), g: extGeom{bs: bs, blocks: 64}, limit: 4}
	must(t, w.extents(node, 0))
	if want := []extRun{{0, 10, 2}, {2, 0, 2}}; fmt.Sprint(w.runs) != fmt.Sprint(want) {
		t.Fatalf("runs %v, want %v", w.runs, want)
	}
	got, err := io.ReadAll(&extReader{r: bytes.NewReader(img), bs: bs, runs: w.runs, size: 4 * bs})
	if want := append(bytes.Repeat([]byte{0xAB}, 2*bs), make([]byte, 2*bs)...); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (%v), equal %v", len(got), err, bytes.Equal(got, want))
	}
}

// TestISOSizesBounded: a path table recorded bigger than the image is
// refused before go-diskfs allocates it.
func TestISOSizesBounded(t *testing.T) {
	img := smallImage(t, ISO9660)
	binary.LittleEndian.PutUint32(img[isoPVDOff+isoPathTableSize:], 0xfffffff0)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := OpenReader("pt.iso", bytes.NewReader(img), int64(len(img)))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorrupt) || after.TotalAlloc-before.TotalAlloc > 64<<20 {
		t.Fatalf("a 4 GiB path table: %v after allocating %d bytes", err, after.TotalAlloc-before.TotalAlloc)
	}
}

// TestSymlinkLoop: a symlink cycle ends as ELOOP, and a path that walks
// up past the root stays at the root.
func TestSymlinkLoop(t *testing.T) {
	needTools(t, "mke2fs")
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(filepath.Join(src, "d"), 0o755))
	must(t, os.Symlink("b", filepath.Join(src, "a")))
	must(t, os.Symlink("a", filepath.Join(src, "b")))
	must(t, os.Symlink("../../../d", filepath.Join(src, "d/up")))
	img := filepath.Join(t.TempDir(), "x.img")
	run(t, "mke2fs", "-q", "-F", "-t", "ext4", "-O", "metadata_csum", "-d", src, img, "8M")
	im, err := Open(img)
	must(t, err)
	defer im.Close()
	if _, err := im.Stat("/a"); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("a symlink cycle: %v", err)
	}
	if st, err := im.Stat("/d/up/up/up"); err != nil || !st.IsDir() {
		t.Errorf("/d/up/up/up: %v %v", st, err)
	}
	if _, err := im.Lstat("/a"); err != nil {
		t.Errorf("Lstat of a link in a cycle: %v", err)
	}
}

// TestExtXattrs: extended attributes mke2fs -d copied from host files
// (small ones in the inode, a big one in the attribute block, binary
// values, a POSIX ACL in ext4's short form) read back as the host's
// getxattr(2) gives them (the ACL in its form), and tar-out carries them
// as SCHILY.xattr records.
func TestExtXattrs(t *testing.T) {
	needTools(t, "mke2fs")
	xattrsReadBack(t, func(src, img string) { run(t, "mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", "-d", src, img, "8M") }, "")
}

// TestSquashfsXattrs: the same attributes stored by mksquashfs (three on
// one file, the big one out of line; squashfs keeps no system.*, so no
// ACL), read by sqxattr.go and carried by tar-out: go-diskfs's own
// reading failed the whole listing.
func TestSquashfsXattrs(t *testing.T) {
	needTools(t, "mksquashfs")
	xattrsReadBack(t, func(src, img string) {
		run(t, "mksquashfs", src, img, "-quiet", "-noappend", "-no-progress", "-xattrs")
	}, "system.")
}

// TestSquashfsManyXattrs: 600 files' attribute sets span several
// metadata blocks of pairs and of ids; a 300-byte value repeated is
// stored once and referenced out of line; each codec mksquashfs offers
// here. Every file's attributes read back as the host's.
func TestSquashfsManyXattrs(t *testing.T) {
	needTools(t, "mksquashfs")
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(src, 0o755))
	want := map[string]map[string]string{}
	for i := range 600 {
		p := fmt.Sprintf("f%03d", i)
		must(t, os.WriteFile(filepath.Join(src, p), []byte(p), 0o644))
		xs := map[string]string{"user.n": fmt.Sprint(i), "user.pad-" + strings.Repeat("p", i%40): "x"}
		if i%3 == 0 {
			xs["trusted.shared"] = strings.Repeat("s", 300) // one value, out of line for the others
		}
		for k, v := range xs {
			if err := unix.Setxattr(filepath.Join(src, p), k, []byte(v), 0); err != nil {
				t.Skipf("setxattr on the host: %v", err)
			}
		}
		want["/"+p] = xs
	}
	for _, comp := range []string{"gzip", "xz", "zstd", "lzo"} {
		img := filepath.Join(t.TempDir(), comp+".sqfs")
		if out, err := exec.Command("mksquashfs", src, img, "-quiet", "-noappend", "-no-progress", "-comp", comp).CombinedOutput(); err != nil {
			if comp == "gzip" { // mksquashfs's default: always there
				t.Fatalf("mksquashfs: %v %s", err, out)
			}
			t.Logf("mksquashfs -comp %s: %v %s", comp, err, out)
			continue
		}
		im, err := Open(img)
		must(t, err)
		ents, err := im.ReadDir("/")
		must(t, err)
		for _, e := range ents {
			xs, err := im.Xattrs("/"+e.Name, e)
			must(t, err)
			got := map[string]string{}
			for _, x := range xs {
				got[x.Name] = string(x.Value)
			}
			if fmt.Sprint(got) != fmt.Sprint(want["/"+e.Name]) {
				t.Fatalf("%s: %s: %v, want %v", comp, e.Name, got, want["/"+e.Name])
			}
		}
		if len(ents) != 600 {
			t.Fatalf("%s: %d entries", comp, len(ents))
		}
		im.Close()
	}
}

// xattrsReadBack sets attributes on a host tree, builds an image of it
// and reads them back against the host's getxattr(2).
// Names starting with dropped ("" none) are not kept by the format.
func xattrsReadBack(t *testing.T, build func(src, img string), dropped string) {
	src := filepath.Join(t.TempDir(), "src")
	os.MkdirAll(filepath.Join(src, "d"), 0o755)
	must(t, os.WriteFile(filepath.Join(src, "f"), []byte("x"), 0o644))
	acl := []byte{2, 0, 0, 0, 1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff, 2, 0, 4, 0, 0xe8, 3, 0, 0, 4, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,
		0x10, 0, 4, 0, 0xff, 0xff, 0xff, 0xff, 0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff} // u::rw-,u:1000:r--,g::r--,m::r--,o::---
	set := map[string]map[string][]byte{
		"/f": {"user.small": []byte("v"), "trusted.big": bytes.Repeat([]byte{0, 1, 2, 3}, 500), "security.bin": {0xff, 0, 0x80}},
		"/d": {"user.dir": []byte("on a directory"), "system.posix_acl_access": acl},
	}
	for p, xs := range set {
		for k, v := range xs {
			if err := unix.Setxattr(filepath.Join(src, p), k, v, 0); err != nil {
				t.Skipf("setxattr %s on the host: %v", k, err)
			}
		}
	}
	img := filepath.Join(t.TempDir(), "x.img")
	build(src, img)
	im, err := Open(img)
	must(t, err)
	defer im.Close()
	for p, want := range set {
		st, err := im.Lstat(p)
		must(t, err)
		xs, err := im.Xattrs(p, st)
		must(t, err)
		got := map[string][]byte{}
		for _, x := range xs {
			got[x.Name] = x.Value
		}
		for k := range want { // the host's own reading, not what was set
			if dropped != "" && strings.HasPrefix(k, dropped) {
				delete(want, k)
				continue
			}
			v := make([]byte, 4096)
			n, err := unix.Getxattr(filepath.Join(src, p), k, v)
			must(t, err)
			want[k] = v[:n]
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: xattrs %v, want %v", p, got, want)
		}
	}
	var tb bytes.Buffer
	must(t, im.TarOut(&tb, "/", TarOptions{}))
	tr := tar.NewReader(&tb)
	found := 0
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		if h.PAXRecords["SCHILY.xattr.trusted.big"] == string(set["/f"]["trusted.big"]) {
			found++
		}
	}
	if found != 1 {
		t.Fatalf("tar-out carried the big attribute %d times", found)
	}
}
