// Command randwrite measures random 4 KiB overwrites into one large file
// through the ddfs Go API (pkg/fsys), committing every -commit writes.
//
//	randwrite -img IMG [-size 1G] [-writes 20000] [-commit 1000] [-bs 4096] [-seed 1]
//	randwrite -plain FILE ...   the same pattern on a plain host file
//	                            (pwrite, fdatasync instead of Sync): the peer
//
// Between the fill and the random phase, -snapshot NAME takes a ddfs
// snapshot (in this process: the image is open) and -before CMD runs a
// shell command (a peer's snapshot). -devstat /sys/block/DEV/stat counts
// device bytes as that device's sectors written over the random phase
// (a filesystem's own metadata writes included) instead of /proc/self/io.
// -fsync syncs a ddfs file as fsync(2) on a mount does (fsys.Fsync).
//
// The image must exist (mkfs.ddfs -b 2G IMG) and have room for the file.
// Phases: the file /randwrite.bin is created and written sequentially with
// seeded random bytes, then Synced (untimed). Then -writes writes of -bs
// random bytes at random -bs-aligned offsets, with fsys.Sync after every
// -commit writes and once at the end (timed). Device bytes are the delta of
// /proc/self/io over the random phase only: write_bytes (bytes the process
// sent towards storage) when nonzero, else wchar (bytes passed to write
// syscalls). Every write is then read back and checked (untimed).
//
// Output: one line of JSON on stdout.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// target is what the benchmark writes to: a file in an image, or a host file.
type target interface {
	writeAt(p []byte, off uint64) error
	readAt(p []byte, off uint64) error
	sync() error
	close() error
}

type ddfsTarget struct {
	f  *fsys.FS
	in *fsys.Inode
}

func openDDFS(img string) (*ddfsTarget, error) {
	st, err := store.Open([]string{img}, volume.Options{Write: true})
	if err != nil {
		return nil, err
	}
	f, err := fsys.New(st, fsys.Options{})
	if err != nil {
		st.Close()
		return nil, err
	}
	in, err := f.Create("/randwrite.bin", fsys.Attr{Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		f.Close()
		return nil, err
	}
	return &ddfsTarget{f: f, in: in}, nil
}

func (t *ddfsTarget) writeAt(p []byte, off uint64) error { return t.f.WriteAt(t.in, p, off) }
func (t *ddfsTarget) readAt(p []byte, off uint64) error {
	_, err := t.f.ReadAt(t.in, p, off)
	return err
}
func (t *ddfsTarget) sync() error {
	if opt.fsync {
		return t.f.Fsync(t.in) // what fsync(2) on a mount does: a log block when it can
	}
	return t.f.Sync()
}
func (t *ddfsTarget) snapshot(name string) error {
	_, err := t.f.CreateSnapshot(name)
	return err
}
func (t *ddfsTarget) close() error { return t.f.Close() }

type plainTarget struct{ f *os.File }

func openPlain(path string) (*plainTarget, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &plainTarget{f}, nil
}

func (t *plainTarget) writeAt(p []byte, off uint64) error {
	_, err := t.f.WriteAt(p, int64(off))
	return err
}
func (t *plainTarget) readAt(p []byte, off uint64) error {
	_, err := t.f.ReadAt(p, int64(off))
	return err
}
func (t *plainTarget) sync() error  { return syscall.Fdatasync(int(t.f.Fd())) }
func (t *plainTarget) close() error { return t.f.Close() }

// ioCounters reads write_bytes and wchar from /proc/self/io.
func ioCounters() (writeBytes, wchar uint64, err error) {
	fh, err := os.Open("/proc/self/io")
	if err != nil {
		return 0, 0, err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		switch k {
		case "write_bytes":
			writeBytes = n
		case "wchar":
			wchar = n
		}
	}
	return writeBytes, wchar, sc.Err()
}

func parseSize(v string) (uint64, error) {
	mult := uint64(1)
	for suf, m := range map[string]uint64{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30} {
		if strings.HasSuffix(v, suf) {
			mult, v = m, strings.TrimSuffix(v, suf)
		}
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n * mult, err
}

type result struct {
	Target        string  `json:"target"`
	Size          uint64  `json:"size"`
	BS            int     `json:"bs"`
	Writes        int     `json:"writes"`
	Commit        int     `json:"commit"`
	Commits       int     `json:"commits"`
	SeqSeconds    float64 `json:"seq_s"`
	Seconds       float64 `json:"seconds"`
	WritesPerS    float64 `json:"writes_per_s"`
	CommitSeconds float64 `json:"commit_s"`
	MaxCommitS    float64 `json:"max_commit_s"`
	UserBytes     uint64  `json:"user_bytes"`
	WriteBytes    uint64  `json:"write_bytes"`
	Wchar         uint64  `json:"wchar"`
	DeviceBytes   uint64  `json:"device_bytes"`
	Source        string  `json:"source"`
	Amplification float64 `json:"amplification"`
	Verified      int     `json:"verified"`
}

func main() {
	img := flag.String("img", "", "ddfs image (made with mkfs.ddfs)")
	plain := flag.String("plain", "", "plain host file instead of an image (the peer)")
	sizeS := flag.String("size", "1G", "file size (K, M, G suffixes)")
	writes := flag.Int("writes", 20000, "random writes")
	commit := flag.Int("commit", 1000, "writes per commit (fsys.Sync, or fdatasync for -plain)")
	bs := flag.Int("bs", 4096, "bytes per write (offsets are multiples of it)")
	seed := flag.Uint64("seed", 1, "seed of the offsets and the data")
	flag.StringVar(&opt.snapshot, "snapshot", "", "-img: take a snapshot of this name before the random phase")
	flag.StringVar(&opt.before, "before", "", "a shell command run before the random phase")
	flag.StringVar(&opt.devstat, "devstat", "", "count device bytes from this /sys/block/DEV/stat")
	flag.BoolVar(&opt.fsync, "fsync", false, "-img: sync the file with fsys.Fsync (the fsync log) instead of a commit")
	flag.Parse()
	if err := run(*img, *plain, *sizeS, *writes, *commit, *bs, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "randwrite:", err)
		os.Exit(1)
	}
}

// opt holds the flags run's signature does not carry.
var opt struct {
	snapshot, before, devstat string
	fsync                     bool
}

// sectorsWritten reads the sectors-written field (the 7th) of a block
// device's stat file, in bytes.
func sectorsWritten(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 7 {
		return 0, fmt.Errorf("%s: %d fields", path, len(f))
	}
	n, err := strconv.ParseUint(f[6], 10, 64)
	return n * 512, err
}

// beforeRandom takes the snapshot or runs the command asked for.
func beforeRandom(t target) error {
	if opt.snapshot != "" {
		d, ok := t.(*ddfsTarget)
		if !ok {
			return fmt.Errorf("-snapshot needs -img")
		}
		if err := d.snapshot(opt.snapshot); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
	}
	if opt.before != "" {
		if out, err := exec.Command("sh", "-c", opt.before).CombinedOutput(); err != nil {
			return fmt.Errorf("-before: %v: %s", err, out)
		}
	}
	return nil
}

func run(img, plain, sizeS string, writes, commit, bs int, seed uint64) error {
	size, err := parseSize(sizeS)
	if err != nil || size < uint64(bs) || bs <= 0 || commit <= 0 || writes < 0 {
		return fmt.Errorf("bad -size, -bs, -commit or -writes")
	}
	size -= size % uint64(bs)
	var t target
	res := result{Size: size, BS: bs, Writes: writes, Commit: commit}
	switch {
	case img != "" && plain == "":
		t, err = openDDFS(img)
		res.Target = "ddfs"
	case plain != "" && img == "":
		t, err = openPlain(plain)
		res.Target = "plain"
	default:
		return fmt.Errorf("give exactly one of -img and -plain")
	}
	if err != nil {
		return err
	}
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	data := rand.NewChaCha8(key)

	// Sequential fill, synced (untimed for the ratio; reported as seq_s).
	// One random buffer, each block stamped with its offset: distinct
	// non-zero blocks without generating a gigabyte of random bytes.
	t0 := time.Now()
	buf := make([]byte, 8<<20)
	data.Read(buf)
	for off := uint64(0); off < size; {
		n := min(uint64(len(buf)), size-off)
		for b := uint64(0); b+8 <= n; b += uint64(bs) {
			binary.LittleEndian.PutUint64(buf[b:], off+b+1)
		}
		if err := t.writeAt(buf[:n], off); err != nil {
			return fmt.Errorf("sequential write at %d: %w", off, err)
		}
		off += n
	}
	if err := t.sync(); err != nil {
		return fmt.Errorf("sync after the sequential write: %w", err)
	}
	res.SeqSeconds = time.Since(t0).Seconds()
	if err := beforeRandom(t); err != nil {
		return err
	}

	// Random phase.
	pos := rand.New(rand.NewPCG(seed, 0x5eed))
	blocks := size / uint64(bs)
	want := make(map[uint64]uint32, writes) // offset -> crc of the last write there
	p := make([]byte, bs)
	wb0, wc0, err := ioCounters()
	if err != nil {
		return err
	}
	var dev0 uint64
	if opt.devstat != "" {
		if dev0, err = sectorsWritten(opt.devstat); err != nil {
			return err
		}
	}
	t0 = time.Now()
	for i := 1; i <= writes; i++ {
		off := pos.Uint64N(blocks) * uint64(bs)
		data.Read(p)
		if err := t.writeAt(p, off); err != nil {
			return fmt.Errorf("write %d at %d: %w", i, off, err)
		}
		want[off] = crc32.ChecksumIEEE(p)
		if i%commit == 0 || i == writes {
			c0 := time.Now()
			if err := t.sync(); err != nil {
				return fmt.Errorf("sync after write %d: %w", i, err)
			}
			d := time.Since(c0).Seconds()
			res.CommitSeconds += d
			res.MaxCommitS = max(res.MaxCommitS, d)
			res.Commits++
		}
	}
	res.Seconds = time.Since(t0).Seconds()
	wb1, wc1, err := ioCounters()
	if err != nil {
		return err
	}
	res.UserBytes = uint64(writes) * uint64(bs)
	res.WriteBytes, res.Wchar = wb1-wb0, wc1-wc0
	res.DeviceBytes, res.Source = res.WriteBytes, "write_bytes"
	if res.WriteBytes == 0 {
		res.DeviceBytes, res.Source = res.Wchar, "wchar"
	}
	if opt.devstat != "" {
		dev1, err := sectorsWritten(opt.devstat)
		if err != nil {
			return err
		}
		res.DeviceBytes, res.Source = dev1-dev0, "devstat"
	}
	if res.Seconds > 0 {
		res.WritesPerS = float64(writes) / res.Seconds
	}
	if res.UserBytes > 0 {
		res.Amplification = float64(res.DeviceBytes) / float64(res.UserBytes)
	}

	// Read every written block back.
	for off, c := range want {
		if err := t.readAt(p, off); err != nil {
			return fmt.Errorf("read back at %d: %w", off, err)
		}
		if crc32.ChecksumIEEE(p) != c {
			return fmt.Errorf("read back at %d: wrong data", off)
		}
		res.Verified++
	}
	if err := t.close(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}
