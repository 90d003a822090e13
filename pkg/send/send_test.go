package send

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"syscall"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

var epoch = time.Unix(1700000000, 0)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// newFS makes a one-device FS (settings s) on a 512 MiB memory device.
func newFS(t testing.TB, fsid byte, s format.Settings) (*fsys.FS, *device.MemDevice) {
	t.Helper()
	d := device.NewMemDevice("m", 512<<20)
	st, tx, err := store.CreateTx(store.CreateParams{FSID: [16]byte{fsid}, Csum: format.CsumCRC32C, NodeSize: 16384, SectorSize: 4096,
		Data: format.ProfileSingle, Metadata: format.ProfileDup, Settings: s, Devices: []store.NewDevice{{Dev: d, Path: "m"}}})
	must(t, err)
	f, err := fsys.New(st, fsys.Options{Now: func() time.Time { return epoch }})
	must(t, err)
	f.Adopt(tx)
	must(t, f.InitRoot(fsys.Attr{Mode: 0o755}))
	must(t, f.Sync())
	return f, d
}

func rnd(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// populate makes every kind of entry: nested directories with odd modes
// and owners, empty, inline, multi-block, sparse (holes inside and at the
// end) files, symlinks, hard links (of a file and of a fifo), device
// nodes, a fifo, xattrs (empty and binary values), and chosen times.
func populate(t testing.TB, f *fsys.FS) {
	mk := func(p string, mode uint32, data ...[]byte) *fsys.Inode {
		a := fsys.Attr{Mode: mode, UID: 1000, GID: 100}
		if t := mode & syscall.S_IFMT; t == syscall.S_IFCHR || t == syscall.S_IFBLK {
			a.Rdev = 0x0103
		}
		in, err := f.Create(p, a)
		must(t, err)
		off := uint64(0)
		for _, d := range data {
			must(t, f.WriteAt(in, d, off))
			off += uint64(len(d)) + 3<<20 // a hole after each piece
		}
		return in
	}
	_, err := f.Mkdir("/d", fsys.Attr{Mode: 0o2750, UID: 7, GID: 8})
	must(t, err)
	_, err = f.Mkdir("/d/e", fsys.Attr{Mode: 0o700})
	must(t, err)
	mk("/empty", 0o600)
	mk("/small", 0o4755, []byte("hello"))
	mk("/d/big", 0o644, rnd(1, 2<<20+123))
	sp := mk("/d/e/sparse", 0o640, rnd(2, 5000), rnd(3, 70000))
	must(t, f.Truncate(sp, sp.Size+(5<<20))) // a hole at the end
	mk("/fifo", syscall.S_IFIFO|0o644)
	mk("/d/null", syscall.S_IFCHR|0o666)
	mk("/blk", syscall.S_IFBLK|0o660)
	_, err = f.Symlink("d/e/sparse", "/link", fsys.Attr{UID: 5})
	must(t, err)
	_, err = f.Symlink("/nowhere/"+string(bytes.Repeat([]byte("x"), 3000)), "/d/longlink", fsys.Attr{})
	must(t, err)
	must(t, f.Link("/d/big", "/d/e/hard"))
	must(t, f.Link("/fifo", "/d/fifo2"))
	d, err := f.Resolve("/d", false)
	must(t, err)
	must(t, f.SetXattr(d, "user.dir", []byte("a directory")))
	small, _ := f.Resolve("/small", false)
	must(t, f.SetXattr(small, "user.empty", nil))
	must(t, f.SetXattr(small, "trusted.bin", []byte{0, 1, 2, 255}))
	for i := range 40 {
		mk(fmt.Sprintf("/d/e/f%02d", i), 0o644, rnd(uint64(10+i), 100*i))
	}
	at := format.Timespec{Sec: 1600000000, Nsec: 123456789}
	for _, p := range []string{"/small", "/d/big", "/link", "/d", "/"} {
		in, err := f.Resolve(p, false)
		must(t, err)
		must(t, f.SetattrInode(in, fsys.SetAttr{Atime: &at, Mtime: &at}))
	}
	must(t, f.Sync())
}

// sameTree requires b's tree under p to be a's: names, types, modes,
// owners, device numbers, sizes, bytes, holes, symlink targets, xattrs,
// atimes and mtimes, and hard links as shared inodes (by the same
// grouping of paths, not numbers). Each side is read through its own
// fsys; the comparison uses nothing of the stream.
func sameTree(t *testing.T, a, b *fsys.FS) int {
	t.Helper()
	n := 0
	groupsA, groupsB := map[uint64][]string{}, map[uint64][]string{}
	var walk func(p string, ia, ib *fsys.Inode)
	walk = func(p string, ia, ib *fsys.Inode) {
		n++
		if ia.Mode != ib.Mode || ia.UID != ib.UID || ia.GID != ib.GID || ia.Size != ib.Size || ia.Nlink != ib.Nlink {
			t.Fatalf("%s: mode %o uid %d gid %d size %d nlink %d, want %o %d %d %d %d", p, ib.Mode, ib.UID, ib.GID, ib.Size, ib.Nlink, ia.Mode, ia.UID, ia.GID, ia.Size, ia.Nlink)
		}
		if !ia.IsDir() && ia.Mtime != ib.Mtime || ia.Atime != ib.Atime && !ia.IsDir() {
			t.Fatalf("%s: times %v %v, want %v %v", p, ib.Atime, ib.Mtime, ia.Atime, ia.Mtime)
		}
		xa, _ := a.ListXattrs(ia)
		xb, _ := b.ListXattrs(ib)
		if fmt.Sprint(xa) != fmt.Sprint(xb) {
			t.Fatalf("%s: xattrs %v, want %v", p, xb, xa)
		}
		if ia.Nlink > 1 && !ia.IsDir() {
			groupsA[ia.Ino] = append(groupsA[ia.Ino], p)
			groupsB[ib.Ino] = append(groupsB[ib.Ino], p)
		}
		switch {
		case ia.IsDir():
			ka, err := a.Children(ia)
			must(t, err)
			kb, err := b.Children(ib)
			must(t, err)
			if len(ka) != len(kb) {
				t.Fatalf("%s: %d entries, want %d", p, len(kb), len(ka))
			}
			for i := range ka {
				if ka[i].Entry.Name != kb[i].Entry.Name {
					t.Fatalf("%s: entry %q, want %q", p, kb[i].Entry.Name, ka[i].Entry.Name)
				}
				walk(path.Join(p, ka[i].Entry.Name), ka[i].Inode, kb[i].Inode)
			}
		case ia.IsSymlink():
			ta, _ := a.ReadlinkInode(ia)
			tb, _ := b.ReadlinkInode(ib)
			if ta != tb {
				t.Fatalf("%s: target %q, want %q", p, tb, ta)
			}
		case ia.IsRegular():
			ba, bb := make([]byte, ia.Size), make([]byte, ib.Size)
			a.ReadAt(ia, ba, 0)
			b.ReadAt(ib, bb, 0)
			if !bytes.Equal(ba, bb) {
				t.Fatalf("%s: contents differ", p)
			}
			ra, _ := a.DataRanges(ia)
			rb, _ := b.DataRanges(ib)
			if fmt.Sprint(ra) != fmt.Sprint(rb) {
				t.Fatalf("%s: data ranges %v, want %v (holes kept)", p, rb, ra)
			}
		default:
			if ia.Rdev != ib.Rdev {
				t.Fatalf("%s: rdev %#x, want %#x", p, ib.Rdev, ia.Rdev)
			}
		}
	}
	ra, err := a.Resolve("/", false)
	must(t, err)
	rb, err := b.Resolve("/", false)
	must(t, err)
	walk("/", ra, rb)
	sig := func(g map[uint64][]string) map[string]bool {
		m := map[string]bool{}
		for _, ps := range g {
			m[fmt.Sprint(ps)] = true
		}
		return m
	}
	if fmt.Sprint(sig(groupsA)) != fmt.Sprint(sig(groupsB)) || len(groupsA) < 2 {
		t.Fatalf("hard links %v, want %v", groupsB, groupsA)
	}
	return n
}

func fsckClean(t *testing.T, d *device.MemDevice) {
	t.Helper()
	vol, err := volume.FromDevices([]device.Device{d.Snapshot()}, false)
	must(t, err)
	rep, err := check.CheckVolume(vol, check.Options{CheckData: true})
	if err != nil || !rep.Clean() {
		t.Fatalf("fsck: %v %v", err, rep.Problems)
	}
}

// sendOf sends snapshot "s" of a populated image.
func sendOf(t testing.TB) (*fsys.FS, []byte) {
	t.Helper()
	src, _ := newFS(t, 1, format.Settings{})
	populate(t, src)
	_, err := src.CreateSnapshot("s")
	must(t, err)
	v, err := src.OpenSnapshot("s")
	must(t, err)
	sn, err := src.Store().FindSnapshot("s")
	must(t, err)
	var buf bytes.Buffer
	if _, err := Send(v, &buf, Snapshot{Name: "s", UUID: sn.UUID, Ctime: sn.Ctime}, SendOptions{}); err != nil {
		t.Fatal(err)
	}
	return v, buf.Bytes()
}

// TestSendReceiveRoundTrip: a full stream received into an image with
// files of its own (and, again, into one with dedupe and compression on)
// makes a snapshot equal, entry by entry, to the sent one, carrying its
// uuid as received_uuid; the live namespace is untouched; fsck
// --check-data is clean.
func TestSendReceiveRoundTrip(t *testing.T) {
	v, stream := sendOf(t)
	sn, _ := v.Store().FindSnapshot("s")
	for _, s := range []format.Settings{{}, {Dedupe: true, Compression: format.CompressZstd, CompressionLevel: 1}} {
		dst, d := newFS(t, 2, s)
		in, err := dst.Create("/mine", fsys.Attr{Mode: 0o644})
		must(t, err)
		must(t, dst.WriteAt(in, []byte("kept"), 0))
		name, _, st, err := Receive(dst, bytes.NewReader(stream))
		if err != nil || name != "s" || st.Bytes != uint64(len(stream)) {
			t.Fatalf("receive: %q %+v %v", name, st, err)
		}
		got, err := dst.OpenSnapshot("s")
		must(t, err)
		if n := sameTree(t, v, got); n < 50 {
			t.Fatalf("compared %d entries", n)
		}
		got.Close()
		r, _ := dst.Store().FindSnapshot("s")
		if r.ReceivedUUID != sn.UUID || r.UUID == sn.UUID {
			t.Fatalf("received uuid %x, uuid %x; sent %x", r.ReceivedUUID, r.UUID, sn.UUID)
		}
		mine, err := dst.Resolve("/mine", false)
		if err != nil || mine.Size != 4 {
			t.Fatalf("live namespace: %v", err)
		}
		if _, _, _, err := Receive(dst, bytes.NewReader(stream)); !errors.Is(err, store.ErrSnapshotExists) {
			t.Fatalf("the same stream again: %v", err)
		}
		if _, ok, _ := dst.Store().Receiving(); ok {
			t.Fatal("a refused receive left one in progress")
		}
		must(t, dst.Sync())
		fsckClean(t, d)
	}
}

// usage is the data and metadata space in use.
func usage(f *fsys.FS) (n uint64) {
	for _, bg := range f.Store().BlockGroups() {
		n += bg.Used
	}
	return n
}

// TestReceiveRefusesDamage: a stream with a byte flipped, cut short,
// missing a record, with a record repeated, or with bytes after its end
// is refused (ErrStream), and the target is as before: no snapshot, no
// receive in progress, the space back, fsck clean.
func TestReceiveRefusesDamage(t *testing.T) {
	_, stream := sendOf(t)
	// Record boundaries, to drop or repeat whole records.
	var starts []int
	for at := format.StreamHeaderSize; at < len(stream); {
		starts = append(starts, at)
		at += format.RecordHeaderSize + int(le32(stream[at:]))
	}
	mid := starts[len(starts)/2]
	next := starts[len(starts)/2+1]
	cases := map[string][]byte{
		"flipped":        flip(stream, len(stream)/3),
		"flipped-data":   flip(stream, len(stream)-100),
		"cut":            stream[:len(stream)*2/3],
		"cut-before-end": stream[:starts[len(starts)-1]],
		"record-missing": append(append([]byte{}, stream[:mid]...), stream[next:]...),
		"record-twice":   append(append(append([]byte{}, stream[:next]...), stream[mid:next]...), stream[next:]...),
		"trailing":       append(append([]byte{}, stream...), 0),
		"no-header":      stream[format.StreamHeaderSize:],
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			dst, d := newFS(t, 3, format.Settings{})
			before := usage(dst)
			_, _, _, err := Receive(dst, bytes.NewReader(s))
			if !errors.Is(err, ErrStream) {
				t.Fatalf("accepted: %v", err)
			}
			if snaps, _ := dst.Snapshots(); len(snaps) != 0 {
				t.Fatalf("snapshots %v", snaps)
			}
			if _, ok, _ := dst.Store().Receiving(); ok {
				t.Fatal("receive left in progress")
			}
			must(t, dst.Sync())
			if after := usage(dst); after > before+64<<10 {
				t.Fatalf("%d bytes in use after the refusal, %d before", after, before)
			}
			fsckClean(t, d)
		})
	}
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func flip(b []byte, at int) []byte {
	c := bytes.Clone(b)
	c[at] ^= 0x40
	return c
}

// FuzzReceive: any stream either makes a snapshot fsck finds clean or is
// refused with the target left without one; never a panic or a hang.
func FuzzReceive(f *testing.F) {
	_, stream := sendOf(f)
	f.Add(stream[:min(len(stream), 4096)])
	small := format.AppendStreamHeader(nil)
	for _, r := range []format.Record{
		{Type: format.RecBegin, UUID: [16]byte{1}, Name: "s"},
		{Type: format.RecMkdir, Path: "a", Mode: 0o755},
		{Type: format.RecMkfile, Path: "a/f", Mode: 0o644},
		{Type: format.RecWrite, Path: "a/f", Offset: 10, Data: []byte("x")},
		{Type: format.RecSymlink, Path: "l", Target: "a"},
		{Type: format.RecLink, Path: "a/g", Target: "a/f"},
		{Type: format.RecEncoded, Path: "a/f", Offset: 8, Length: 3, RAMBytes: 4, RAMOffset: 1, Compression: format.CompressS2,
			Data: append([]byte{6, 0, 0, 0}, s2Block("abcd")...)},
	} {
		small = format.AppendRecord(small, &r)
	}
	f.Add(format.AppendRecord(small, &format.Record{Type: format.RecEnd, Records: 7, Bytes: uint64(len(small))}))
	f.Fuzz(func(t *testing.T, s []byte) {
		dst, _ := newFS(t, 4, format.Settings{})
		_, _, _, err := Receive(dst, bytes.NewReader(s))
		snaps, _ := dst.Snapshots()
		if (err == nil) != (len(snaps) == 1) || len(snaps) > 1 {
			t.Fatalf("err %v with snapshots %v", err, snaps)
		}
		if _, ok, _ := dst.Store().Receiving(); ok {
			t.Fatal("receive left in progress")
		}
	})
}

// TestReceiveResume: a receive made resumable that meets a cut stream
// keeps what it committed (invisible: no snapshot, readers see the live
// namespace, fsck clean); after a reopen the whole stream, given again
// with Resume, is checked, skipped to the recorded point and finished
// into a snapshot equal to the sent one. A different stream, or a resume
// with nothing in progress, is refused.
func TestReceiveResume(t *testing.T) {
	v, stream := sendOf(t)
	dst, d := newFS(t, 5, format.Settings{})
	cut := stream[:len(stream)*3/5]
	if _, _, _, err := ReceiveWith(dst, bytes.NewReader(cut), Options{Resumable: true}); !errors.Is(err, ErrStream) {
		t.Fatalf("cut stream: %v", err)
	}
	r, ok, err := dst.Store().Receiving()
	if err != nil || !ok || r.Applied == 0 || r.Applied > uint64(len(cut)) {
		t.Fatalf("kept receive: %+v %v %v", r, ok, err)
	}
	if snaps, _ := dst.Snapshots(); len(snaps) != 0 {
		t.Fatalf("snapshots %v", snaps)
	}
	fsckClean(t, d)
	must(t, dst.Close())
	g, err := fsys.OpenDevices([]device.Device{d}, true, fsys.Options{Receiving: true, Now: func() time.Time { return epoch }})
	must(t, err)
	_, other := sendOf(t) // the same tree, another snapshot (uuid)
	if _, _, _, err := ReceiveWith(g, bytes.NewReader(other), Options{Resume: true}); !errors.Is(err, ErrStream) {
		t.Fatalf("resume with another stream: %v", err)
	}
	name, _, st, err := ReceiveWith(g, bytes.NewReader(stream), Options{Resume: true})
	if err != nil || name != "s" {
		t.Fatalf("resume: %q %v", name, err)
	}
	if st.Data == 0 || st.Data >= 2<<20 {
		t.Fatalf("resume applied %d data bytes: not only the rest of the stream", st.Data)
	}
	got, err := g.OpenSnapshot("s")
	must(t, err)
	sameTree(t, v, got)
	got.Close()
	if _, _, _, err := ReceiveWith(g, bytes.NewReader(stream), Options{Resume: true}); !errors.Is(err, ErrNoReceive) {
		t.Fatalf("resume with nothing in progress: %v", err)
	}
	must(t, g.Sync())
	fsckClean(t, d)
}

// renamed re-encodes stream as the stream of a snapshot named name (a
// new uuid), its END recounted.
func renamed(t *testing.T, stream []byte, name string) []byte {
	return restream(t, stream, func(r *format.Record) {
		if r.Type == format.RecBegin {
			r.Name, r.UUID[15] = name, r.UUID[15]^1
		}
	})
}

// restream re-encodes stream with edit applied to each record before END
// (nil: none) and the extra records put before END, which is recounted.
func restream(t *testing.T, stream []byte, edit func(*format.Record), extra ...format.Record) []byte {
	t.Helper()
	out := format.AppendStreamHeader(nil)
	rd := bytes.NewReader(stream[format.StreamHeaderSize:])
	var buf []byte
	n := uint64(0)
	for {
		var r format.Record
		_, err := format.ReadRecord(rd, &r, &buf)
		must(t, err)
		if r.Type == format.RecEnd {
			for i := range extra {
				out = format.AppendRecord(out, &extra[i])
			}
			r.Records, r.Bytes = n+uint64(len(extra)), uint64(len(out))
			return format.AppendRecord(out, &r)
		}
		if edit != nil {
			edit(&r)
		}
		out = format.AppendRecord(out, &r)
		n++
	}
}

// TestReceiveDedupes: a receiver with dedupe on shares what arrives
// with what it holds: the same tree received a second time takes no
// second copy of its data.
func TestReceiveDedupes(t *testing.T) {
	v, stream := sendOf(t)
	dst, _ := newFS(t, 6, format.Settings{Dedupe: true})
	_, _, _, err := Receive(dst, bytes.NewReader(stream))
	must(t, err)
	must(t, dst.Sync())
	data := func() (n uint64) {
		for _, bg := range dst.Store().BlockGroups() {
			if bg.Chunk.Type == format.ChunkData {
				n += bg.Used
			}
		}
		return n
	}
	before := data()
	_, _, st, err := Receive(dst, bytes.NewReader(renamed(t, stream, "again")))
	must(t, err)
	must(t, dst.Sync())
	if grew := data() - before; grew > st.Data/10 {
		t.Fatalf("the second receive of %d data bytes took %d more", st.Data, grew)
	}
	got, err := dst.OpenSnapshot("again")
	must(t, err)
	sameTree(t, v, got)
}
