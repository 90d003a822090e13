package foreign

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestISOTrees: an image without Rock Ridge lists its Joliet tree where
// it has one (names as written, UCS-2), else its ISO names as Linux's
// isofs shows them (lower case, no ";1", no "." ending a name without
// extension); with Rock Ridge and Joliet both, Rock Ridge's. Bytes read
// back from every tree.
func TestISOTrees(t *testing.T) {
	needTools(t, "genisoimage")
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(filepath.Join(src, "Dir"), 0o755))
	files := map[string]string{"Readme.txt": "readme", "noext": "no extension", "Dir/sub.c": "int x;", "café.txt": "accent"}
	for p, b := range files {
		must(t, os.WriteFile(filepath.Join(src, p), []byte(b), 0o600))
	}
	for _, c := range []struct {
		flags []string
		want  string // the tree's paths, sorted; each file's bytes checked against files
		perm  uint32 // a file's permission bits
	}{
		{nil, "/caf__.txt /dir /dir/sub.c /noext /readme.txt", 0o444},
		{[]string{"-J"}, "/Dir /Dir/sub.c /Readme.txt /café.txt /noext", 0o444},
		{[]string{"-J", "-R"}, "/Dir /Dir/sub.c /Readme.txt /café.txt /noext", 0o600},
	} {
		img := filepath.Join(t.TempDir(), "x.iso")
		run(t, "genisoimage", append(append([]string{"-quiet", "-input-charset", "utf-8"}, c.flags...), "-o", img, src)...)
		im, err := Open(img)
		must(t, err)
		var got []string
		var walk func(dir string)
		walk = func(dir string) {
			ents, err := im.ReadDir(dir)
			if err != nil {
				t.Fatalf("%v: %s: %v", c.flags, dir, err)
			}
			for _, e := range ents {
				p := path.Join(dir, e.Name)
				got = append(got, p)
				if e.IsDir() {
					walk(p)
					continue
				}
				f, err := im.Open(p)
				must(t, err)
				b, err := io.ReadAll(struct{ io.Reader }{f})
				f.Close()
				want := ""
				for k, v := range files {
					if strings.EqualFold(k, strings.TrimPrefix(p, "/")) || strings.HasPrefix(k, "caf") && strings.HasPrefix(e.Name, "caf") {
						want = v
					}
				}
				if err != nil || string(b) != want || e.Mode&0o7777 != c.perm {
					t.Errorf("%v: %s: %q %v, mode %#o", c.flags, p, b, err, e.Mode)
				}
			}
		}
		walk("/")
		sort.Strings(got)
		if s := strings.Join(got, " "); s != c.want {
			t.Errorf("%v: tree %s, want %s", c.flags, s, c.want)
		}
		im.Close()
	}
}

// isoRecordsAt calls fn with each record of the directory at lba (size
// bytes) and its System Use area.
func isoRecordsAt(img []byte, lba, size uint32, fn func(rec, area []byte)) {
	b := img[int(lba)*isoBlock : int(lba)*isoBlock+int(size)]
	for off := 0; off < len(b) && b[off] != 0; off += int(b[off]) {
		rec := b[off : off+int(b[off])]
		nl := int(rec[32])
		fn(rec, rec[33+nl+(nl+1)%2:])
	}
}

// TestISOHugeSizesRefused: a directory record naming 4 GiB of entries,
// and a Rock Ridge continuation area of 4 GiB on a tree whose root has
// System Use entries but no PX, are refused after small reads. go-diskfs
// v1.9.4 allocated each size before reading (8 GiB for this image: the
// fuzzer's out-of-memory crash).
func TestISOHugeSizesRefused(t *testing.T) {
	img := smallImage(t, ISO9660)
	lba, size := binary.LittleEndian.Uint32(img[isoPVDOff+isoRootRecord+2:]), binary.LittleEndian.Uint32(img[isoPVDOff+isoRootRecord+10:])
	var dLBA, dLen uint32
	first := true
	isoRecordsAt(img, lba, size, func(rec, area []byte) {
		if first { // the root's ".": PX becomes an unknown entry, SP stays
			area[bytes.Index(area, []byte("PX"))+1] = 'Y'
			first = false
		}
		if rec[32] == 1 && rec[33] == 'D' {
			dLBA, dLen = binary.LittleEndian.Uint32(rec[2:]), binary.LittleEndian.Uint32(rec[10:])
		}
	})
	var filler []byte
	isoRecordsAt(img, dLBA, dLen, func(rec, area []byte) {
		if len(area) < 36 || rec[33] <= 1 && rec[32] == 1 {
			return
		}
		filler = area // each entry's last System Use entry: a CE of 4 GiB
		copy(area, "XX")
		area[2], area[3] = byte(len(area)-28), 1
		ce := area[len(area)-28:]
		copy(ce, "CE")
		ce[2], ce[3] = 28, 1
		binary.LittleEndian.PutUint32(ce[4:], dLBA)
		binary.LittleEndian.PutUint32(ce[12:], 0)
		binary.LittleEndian.PutUint32(ce[20:], 0xffffff00)
	})
	if filler == nil {
		t.Fatal("no entry in /d to craft")
	}
	huge := bytes.Clone(img) // and /d's own record names 4 GiB of entries
	isoRecordsAt(huge, lba, size, func(rec, area []byte) {
		if rec[32] == 1 && rec[33] == 'D' {
			binary.LittleEndian.PutUint32(rec[10:], 0xffffff00)
		}
	})
	for name, img := range map[string][]byte{"ce": img, "dir": huge} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		im, err := OpenReader(name, bytes.NewReader(img), int64(len(img)))
		must(t, err)
		_, err = im.ReadDir("/d")
		walkAll(img)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrCorrupt) || after.TotalAlloc-before.TotalAlloc > 64<<20 {
			t.Errorf("%s: /d read (%v) after allocating %d bytes", name, err, after.TotalAlloc-before.TotalAlloc)
		}
	}
}

// isoRec is a directory record of a file named name: size bytes at lba,
// flags (0x80: the file goes on in the next record).
func isoRec(name string, lba, size uint32, flags byte) []byte {
	l := 33 + len(name) + (len(name)+1)%2
	r := make([]byte, l)
	r[0] = byte(l)
	binary.LittleEndian.PutUint32(r[2:], lba)
	binary.BigEndian.PutUint32(r[6:], lba)
	binary.LittleEndian.PutUint32(r[10:], size)
	binary.BigEndian.PutUint32(r[14:], size)
	r[25], r[32] = flags, byte(len(name))
	copy(r[33:], name)
	return r
}

// TestISOSplitFileSize: a file in two extents of 3 GiB each (xorriso
// writes files over 4 GiB so) is 6 GiB long, not its size modulo 4 GiB;
// ddfs lists it and refuses to read it (several extents).
func TestISOSplitFileSize(t *testing.T) {
	dir := slices.Concat(isoRec("\x00", 1, isoBlock, 2), isoRec("\x01", 1, isoBlock, 2),
		isoRec("BIG.;1", 10, 3<<30, 0x80), isoRec("BIG.;1", 20, 3<<30, 0))
	img := make([]byte, 2*isoBlock)
	copy(img[isoBlock:], dir)
	im := &Image{name: "x.iso", kind: ISO9660, be: &roBackend{r: bytes.NewReader(img), size: int64(len(img))}, iso: isoVolume{tree: isoPlain, rootLBA: 1, rootLen: isoBlock}}
	ents, err := im.ReadDir("/")
	must(t, err)
	if len(ents) != 1 || ents[0].Name != "big" || ents[0].Size != 6<<30 {
		t.Fatalf("entries %+v", ents)
	}
	if _, err := im.Open("/big"); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("open of a file in two extents: %v", err)
	}
}
