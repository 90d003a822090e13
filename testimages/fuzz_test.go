package testimages

import (
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// stepTimeout bounds each step of FuzzImage: a reader that takes longer
// on a 64 MiB image is hanging (a busy machine is slow, not 100x slower).
const stepTimeout = 20 * time.Second

// fileReadCap bounds what FuzzImage reads of one file: a crafted size may
// be 2^62, and reading holes is not what is tested here.
const fileReadCap = 1 << 20

// block is one checksummed metadata block of a frozen image: every copy
// of a tree node, or one superblock copy.
type block struct {
	copies []volume.Target // all copies of a node; one for a superblock
	size   int
}

// frozenSet is a frozen image set loaded into memory devices, with the
// blocks a fuzz input may damage.
type frozenSet struct {
	name   string
	devs   []*device.MemDevice
	blocks []block
	csum   format.CsumType
}

var (
	loadOnce sync.Once
	frozen   []*frozenSet
	loadErr  error
)

// loadFrozen unpacks every frozen set once per process.
func loadFrozen() ([]*frozenSet, error) {
	loadOnce.Do(func() { frozen, loadErr = loadSets() })
	return frozen, loadErr
}

func loadSets() ([]*frozenSet, error) {
	gz, _ := filepath.Glob("*.img.gz")
	sort.Strings(gz)
	bySet := map[string][]string{}
	var names []string
	for _, g := range gz {
		set := strings.SplitN(g, ".", 2)[0]
		if bySet[set] == nil {
			names = append(names, set)
		}
		bySet[set] = append(bySet[set], g)
	}
	var out []*frozenSet
	for _, name := range names {
		s := &frozenSet{name: name}
		for _, g := range bySet[name] {
			d, err := gunzipDevice(g)
			if err != nil {
				return nil, err
			}
			s.devs = append(s.devs, d)
		}
		if err := s.findBlocks(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no frozen images")
	}
	return out, nil
}

func gunzipDevice(path string) (*device.MemDevice, error) {
	in, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	d := device.NewMemDevice(filepath.Base(path), int64(len(b)))
	// Only non-zero pages, so the device stays sparse.
	for off := 0; off < len(b); off += 4096 {
		pg := b[off:min(off+4096, len(b))]
		for _, c := range pg {
			if c != 0 {
				d.WriteAt(pg, int64(off))
				break
			}
		}
	}
	return d, d.Flush()
}

// findBlocks lists every superblock copy and every node of every tree.
func (s *frozenSet) findBlocks() error {
	for i, d := range s.devs {
		for _, off := range volume.SuperOffsets(d.Size()) {
			s.blocks = append(s.blocks, block{copies: []volume.Target{{DevID: uint64(i), Physical: off}}, size: format.SuperblockSize})
		}
	}
	vol, err := volume.FromDevices(s.deviceList(s.devs), false)
	if err != nil {
		return err
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		return err
	}
	s.csum = vol.Super.CsumType
	byID := map[uint64]int{}
	for i, d := range vol.Devices() {
		byID[d.ID] = i
	}
	for id := format.TreeID(1); id <= format.NumTrees; id++ {
		err := st.Tree(id).WalkNodes(func(n *format.Node) error {
			ts, err := vol.Locate(n.Logical)
			if err != nil {
				return err
			}
			for i := range ts {
				ts[i].DevID = uint64(byID[ts[i].DevID]) // index into s.devs
			}
			s.blocks = append(s.blocks, block{copies: ts, size: int(vol.Super.NodeSize)})
			return nil
		})
		if err != nil {
			return fmt.Errorf("%v tree: %w", id, err)
		}
	}
	return nil
}

func (s *frozenSet) deviceList(devs []*device.MemDevice) []device.Device {
	out := make([]device.Device, len(devs))
	for i, d := range devs {
		out[i] = d
	}
	return out
}

// damage applies the mutations of script to copies of the set's devices:
// 5 bytes each, block index (u16), offset in the block (u16), xor value.
// The change goes to every copy of the block, whose checksum is then
// recomputed, so the readers see a well-formed lie, not a checksum error.
func (s *frozenSet) damage(script []byte) []*device.MemDevice {
	devs := make([]*device.MemDevice, len(s.devs))
	for i, d := range s.devs {
		devs[i] = d.Snapshot()
	}
	for ; len(script) >= 5; script = script[5:] {
		b := s.blocks[int(binary.LittleEndian.Uint16(script))%len(s.blocks)]
		off := int(binary.LittleEndian.Uint16(script[2:])) % b.size
		if off < format.CsumSize {
			off += format.CsumSize // the checksum is recomputed anyway
		}
		for _, c := range b.copies {
			buf := make([]byte, b.size)
			devs[c.DevID].ReadAt(buf, int64(c.Physical))
			buf[off] ^= script[4] | 1
			sum := format.Checksum(s.csum, buf[format.CsumSize:])
			copy(buf, sum[:])
			devs[c.DevID].WriteAt(buf, int64(c.Physical))
		}
	}
	return devs
}

// craftedSeeds are mutations of the fields a crafted image lies in most
// usefully: the top byte of a regular file extent's disk_len, offset,
// num_bytes and ram_bytes, and of an inode's size (huge values).
func (s *frozenSet) craftedSeeds() [][]byte {
	var out [][]byte
	add := func(blk, off int) {
		m := binary.LittleEndian.AppendUint16(nil, uint16(blk))
		m = binary.LittleEndian.AppendUint16(m, uint16(off))
		out = append(out, append(m, 0x40))
	}
	var extent, inode bool
	for bi, b := range s.blocks {
		if b.size == format.SuperblockSize || extent && inode {
			continue
		}
		buf := make([]byte, b.size)
		s.devs[b.copies[0].DevID].ReadAt(buf, int64(b.copies[0].Physical))
		want := format.NodeExpect{Logical: binary.LittleEndian.Uint64(buf[48:]), Level: -1}
		copy(want.FSID[:], buf[32:48])
		n, err := format.UnmarshalNode(buf, s.csum, want)
		if err != nil || !n.IsLeaf() {
			continue
		}
		for i, it := range n.Items {
			data := int(binary.LittleEndian.Uint32(buf[format.NodeHeaderSize+i*format.LeafItemSize+format.KeySize:]))
			switch {
			case !extent && it.Key.Type == format.FileExtentKey && len(it.Data) == format.FileExtentRegSize:
				extent = true
				for _, field := range []int{24, 32, 40, 48} { // disk_len, offset, num_bytes, ram_bytes
					add(bi, data+field+7)
				}
			case !inode && it.Key.Type == format.InodeItemKey:
				inode = true
				add(bi, data+8+7) // size
			}
		}
	}
	return out
}

// FuzzImage damages the metadata of a frozen image (first byte: which
// set; then mutations, see damage) and runs the readers on it: open, walk
// the namespace and read every file, fsck. Each may fail, but must not
// panic, and must end within stepTimeout. Without mutations everything
// must succeed and fsck must be clean.
func FuzzImage(f *testing.F) {
	sets, err := loadFrozen()
	if err != nil {
		f.Fatal(err)
	}
	for i := range sets {
		f.Add([]byte{byte(i)})
		f.Add([]byte{byte(i), 0, 0, 200, 0, 0x40})      // superblock: roots area
		f.Add([]byte{byte(i), 8, 0, 100, 0, 0x01})      // first node: header
		f.Add([]byte{byte(i), 9, 0, 120, 0, 0xff})      // an item key
		f.Add([]byte{byte(i), 10, 0, 0xf0, 0x3f, 0x80}) // item data at the end of a node
		f.Add([]byte{byte(i), 11, 0, 0x68, 0, 0x7f, 12, 0, 0x70, 0, 0x10})
		for _, seed := range sets[i].craftedSeeds() {
			f.Add(append([]byte{byte(i)}, seed...))
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 || len(in) > 1+5*16 {
			return
		}
		s := sets[int(in[0])%len(sets)]
		devs := s.damage(in[1:])
		clean := len(in) < 6
		var vol *volume.Volume
		var st *store.FS
		var openErr error
		runStep(t, "open", func() {
			if vol, openErr = volume.FromDevices(s.deviceList(devs), false); openErr == nil {
				st, openErr = store.OpenVolume(vol)
			}
		})
		if openErr != nil {
			if clean {
				t.Fatalf("%s: undamaged image does not open: %v", s.name, openErr)
			}
			return
		}
		runStep(t, "walk and read", func() {
			files, err := walkAndRead(st)
			if clean && (err != nil || files < 5) {
				t.Fatalf("%s: undamaged image: %d files read: %v", s.name, files, err)
			}
		})
		runStep(t, "fsck", func() {
			v, err := volume.FromDevices(s.deviceList(devs), false)
			if err != nil {
				t.Fatalf("%s: reopen for fsck: %v", s.name, err)
			}
			rep, err := check.CheckVolume(v, check.Options{CheckData: true})
			if clean && (err != nil || !rep.Clean()) {
				t.Fatalf("%s: undamaged image: fsck %v %v", s.name, err, rep)
			}
		})
	})
}

// runStep runs fn and fails the test if it panics or outlives stepTimeout.
func runStep(t *testing.T, name string, fn func()) {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Sprintf("panic: %v\n%s", r, debug.Stack())
				return
			}
			done <- ""
		}()
		fn()
	}()
	select {
	case msg := <-done:
		if msg != "" {
			t.Fatalf("%s: %s", name, msg)
		}
	case <-time.After(stepTimeout):
		t.Fatalf("%s: still running after %v (hang)", name, stepTimeout)
	}
}

// walkAndRead visits every directory once (a crafted cycle must not make
// the walk itself endless) and reads every regular file up to fileReadCap;
// it returns how many files it read.
func walkAndRead(st *store.FS) (int, error) {
	f, err := fsys.New(st, fsys.Options{})
	if err != nil {
		return 0, err
	}
	root, err := f.Resolve("/", false)
	if err != nil {
		return 0, err
	}
	files := 0
	seen := map[uint64]bool{}
	var firstErr error
	note := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	queue := []*fsys.Inode{root}
	buf := make([]byte, 64<<10)
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		ents, err := f.List(dir)
		note(err)
		for _, e := range ents {
			if seen[e.Ino] {
				continue
			}
			seen[e.Ino] = true
			in, err := f.Inode(e.Ino)
			if err != nil {
				note(err)
				continue
			}
			switch {
			case in.IsDir():
				queue = append(queue, in)
			case in.IsRegular():
				files++
				for off := uint64(0); off < min(in.Size, fileReadCap); off += uint64(len(buf)) {
					if _, err := f.ReadAt(in, buf, off); err != nil && err != io.EOF {
						note(err)
						break
					}
				}
			}
			_, err = f.ListXattrs(in)
			note(err)
		}
	}
	return files, firstErr
}
