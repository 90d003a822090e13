package foreign

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

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
func smallImage(t testing.TB, k Kind) []byte {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	for p, b := range map[string]string{"a": "hello\n", "d/b": "bee\n", "d/e/c": string(bytes.Repeat([]byte("c"), 5000))} {
		full := filepath.Join(src, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte(b), 0o644)
	}
	os.Symlink("../a", filepath.Join(src, "d/l"))
	img := filepath.Join(dir, "x.img")
	var f *builder
	for i := range builders {
		if builders[i].kind == k {
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
		run(t, "mke2fs", "-q", "-F", "-t", "ext4", "-O", "metadata_csum", "-b", "1024", "-N", "32", "-d", src, img, "192K")
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
func FuzzExt4(f *testing.F)     { fuzzFormat(f, Ext4) }
func FuzzSquashfs(f *testing.F) { fuzzFormat(f, Squashfs) }
func FuzzISO9660(f *testing.F)  { fuzzFormat(f, ISO9660) }
func FuzzFAT(f *testing.F)      { fuzzFormat(f, FAT12) }

// TestFATLoopRefused: a cluster chain that comes back to itself (go-diskfs
// would follow it forever) is refused at open.
func TestFATLoopRefused(t *testing.T) {
	img := smallImage(t, FAT12)
	p, ok := parseBPB(img)
	if !ok {
		t.Fatal("no BPB")
	}
	fat := img[p.reserved*p.bytesPerSector:]
	// Cluster 2 is the first file's; make it point to itself.
	v := binary.LittleEndian.Uint16(fat[3:])
	binary.LittleEndian.PutUint16(fat[3:], v&0xf000|2)
	_, err := OpenReader("loop.img", bytes.NewReader(img), int64(len(img)))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a FAT chain looping on cluster 2 opened: %v", err)
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

// TestExtHolesRefused: go-diskfs v1.9.4 reads an ext4 hole from the
// wrong blocks, so a file with holes is refused, never read wrong.
func TestExtHolesRefused(t *testing.T) {
	needTools(t, "mke2fs")
	src := filepath.Join(t.TempDir(), "src")
	os.MkdirAll(src, 0o755)
	f, err := os.Create(filepath.Join(src, "sparse"))
	must(t, err)
	f.WriteAt([]byte("end"), 600<<10)
	f.Close()
	img := filepath.Join(t.TempDir(), "x.img")
	run(t, "mke2fs", "-q", "-F", "-t", "ext4", "-O", "metadata_csum", "-d", src, img, "8M")
	im, err := Open(img)
	must(t, err)
	defer im.Close()
	if _, err := im.Open("/sparse"); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("a sparse ext4 file opened: %v", err)
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
