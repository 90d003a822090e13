// Package e2e runs the built binaries the way a user does.
package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

var binDir string

// extraBinaries are built too (files add theirs in init).
var extraBinaries = map[string]string{}

func TestMain(m *testing.M) {
	// Run as a background job (SIGINT ignored), the tools rightly keep
	// ignoring SIGINT, which the interrupt tests send: catching it here
	// makes exec start them with SIGINT at its default again.
	if signal.Ignored(syscall.SIGINT) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGINT)
	}
	dir, err := os.MkdirTemp("", "ddfs-e2e-bin")
	if err != nil {
		panic(err)
	}
	binDir = dir
	bins := map[string]string{"mkfs.ddfs": "../mkfs", "ddfs": "../ddfs", "fsck.ddfs": "../fsck"}
	for k, v := range extraBinaries {
		bins[k] = v
	}
	for name, pkg := range bins {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build: the tools ship static
		out, err := cmd.CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", name, err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	if fixtureDir != "" {
		os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, dir, name string, args ...string) result {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, name), args...)
	cmd.Dir = dir
	return runCmd(t, cmd)
}

// runCmd runs cmd and returns its exit code and output.
func runCmd(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	r := result{stdout: o.String(), stderr: e.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

func must(t *testing.T, r result, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	return r
}

func allocated(t *testing.T, path string) int64 {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

type info struct {
	UUID       string `json:"uuid"`
	Label      string `json:"label"`
	Generation uint64 `json:"generation"`
	NodeSize   uint32 `json:"nodesize"`
	SectorSize uint32 `json:"sectorsize"`
	Csum       string `json:"csum"`
	Devices    []struct {
		DevID      uint64 `json:"devid"`
		Path       string `json:"path"`
		Size       uint64 `json:"size"`
		Rotational bool   `json:"rotational"`
		SeekSpeed  uint64 `json:"seek_speed"`
		Bandwidth  uint64 `json:"bandwidth"`
	} `json:"devices"`
	Chunks []struct {
		Logical uint64 `json:"logical"`
		Length  uint64 `json:"length"`
		Type    string `json:"type"`
		Profile string `json:"profile"`
		Stripes []struct {
			DevID  uint64 `json:"devid"`
			Offset uint64 `json:"offset"`
		} `json:"stripes"`
	} `json:"chunks"`
	Roots []struct {
		Tree    string `json:"tree"`
		Logical uint64 `json:"logical"`
		Level   uint8  `json:"level"`
	} `json:"roots"`
}

func getInfo(t *testing.T, dir, image string) info {
	t.Helper()
	r := must(t, run(t, dir, "ddfs", "info", "--json", image), 0)
	var in info
	if err := json.Unmarshal([]byte(r.stdout), &in); err != nil {
		t.Fatalf("info --json: %v\n%s", err, r.stdout)
	}
	return in
}

// TestFourTerabyteImages: four sparse 1 TiB images in well under a second
// (timing is the benchmark's job; here: sizes), a few MiB allocated each.
func TestFourTerabyteImages(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "1T", "-d", "raid10", "-m", "raid1c3", "-L", "big", "a.img", "b.img", "c.img", "d.img"), 0)
	for _, f := range []string{"a.img", "b.img", "c.img", "d.img"} {
		st, _ := os.Stat(filepath.Join(dir, f))
		if st.Size() != 1<<40 {
			t.Fatalf("%s: size %d", f, st.Size())
		}
		if a := allocated(t, filepath.Join(dir, f)); a > 4<<20 {
			t.Fatalf("%s: %d bytes allocated", f, a)
		}
	}
	in := getInfo(t, dir, "c.img")
	if in.Label != "big" || len(in.Devices) != 4 || in.NodeSize != 16384 || in.SectorSize != 4096 || in.Csum != "crc32c" || in.Generation != 1 {
		t.Fatalf("info: %+v", in)
	}
	profiles := map[string]string{}
	for _, c := range in.Chunks {
		profiles[c.Type] = c.Profile
		if len(c.Stripes) == 0 || c.Length == 0 {
			t.Fatalf("chunk %+v", c)
		}
	}
	if profiles["data"] != "raid10" || profiles["metadata"] != "raid1c3" || profiles["system"] != "raid1c3" {
		t.Fatalf("profiles %v", profiles)
	}
	if len(in.Roots) < 3 {
		t.Fatalf("roots %+v", in.Roots)
	}
	r := must(t, run(t, dir, "fsck.ddfs", "d.img"), 0)
	if !strings.Contains(r.stdout, "clean") {
		t.Fatalf("fsck: %s", r.stdout)
	}
	df := must(t, run(t, dir, "ddfs", "df", "-b", "a.img"), 0)
	if !strings.Contains(df.stdout, "raid10") || !strings.Contains(df.stdout, "1099511627776") {
		t.Fatalf("df: %s", df.stdout)
	}
}

func TestDeviceProperties(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "--alloc-policy", "ssd-metadata", "ssd.img", "hdd.img:rotational=1,seek_speed=10,bandwidth=150M"), 0)
	in := getInfo(t, dir, "hdd.img")
	d := in.Devices
	if len(d) != 2 || d[0].Rotational || !d[1].Rotational || d[1].SeekSpeed != 10 || d[1].Bandwidth != 150<<20 || d[1].Path != "hdd.img" {
		t.Fatalf("devices %+v", d)
	}
	for _, c := range in.Chunks {
		if c.Type != "data" {
			for _, s := range c.Stripes {
				if c.Profile == "single" && s.DevID != 1 {
					t.Fatalf("ssd-metadata put %s on devid %d", c.Type, s.DevID)
				}
			}
		}
	}
}

func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "x.img"), 0)
	r := must(t, run(t, dir, "mkfs.ddfs", "-q", "x.img"), 1)
	if !strings.Contains(r.stderr, "x.img: contains a ddfs filesystem") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("stderr %q", r.stderr)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-f", "x.img"), 0)
	r = must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-d", "raid10", "p.img", "q.img"), 1)
	if !strings.Contains(r.stderr, "raid10 needs at least 4 devices") {
		t.Fatalf("stderr %q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "p.img")); !os.IsNotExist(err) {
		t.Fatalf("failed mkfs left p.img behind")
	}
	r = must(t, run(t, dir, "mkfs.ddfs", "-q", "nothere.img"), 1)
	if !strings.Contains(r.stderr, "-b") {
		t.Fatalf("stderr %q", r.stderr)
	}
	must(t, run(t, dir, "mkfs.ddfs", "--bogus", "x.img"), 2)
	must(t, run(t, dir, "ddfs", "frobnicate", "x.img"), 2)
	must(t, run(t, dir, "fsck.ddfs"), 16)
	r = must(t, run(t, dir, "ddfs", "info", "missing.img"), 1)
	if !strings.HasPrefix(r.stderr, "ddfs: info: missing.img") {
		t.Fatalf("stderr %q", r.stderr)
	}
	// An ext4-looking signature is refused too.
	ext := filepath.Join(dir, "ext.img")
	os.WriteFile(ext, make([]byte, 64<<20), 0o644)
	f, _ := os.OpenFile(ext, os.O_RDWR, 0)
	f.WriteAt([]byte{0x53, 0xEF}, 0x438)
	f.Close()
	r = must(t, run(t, dir, "mkfs.ddfs", "-q", "ext.img"), 1)
	if !strings.Contains(r.stderr, "ext2/3/4") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

func TestBusy(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "x.img"), 0)
	dev, err := device.Open(filepath.Join(dir, "x.img"), device.OpenOptions{Mode: device.ReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	r := must(t, run(t, dir, "mkfs.ddfs", "-q", "-f", "x.img"), 1)
	if !strings.Contains(r.stderr, fmt.Sprintf("in use by process %d", os.Getpid())) {
		t.Fatalf("stderr %q", r.stderr)
	}
	// Writers fail; readers read the last commit beside the writer, and
	// fsck -n says so.
	if r := must(t, run(t, dir, "ddfs", "touch", "x.img:/new"), 1); !strings.Contains(r.stderr, fmt.Sprintf("in use by process %d", os.Getpid())) {
		t.Fatalf("touch: %q", r.stderr)
	}
	must(t, run(t, dir, "ddfs", "ls", "-l", "x.img:/"), 0)
	if r := must(t, run(t, dir, "fsck.ddfs", "-n", "x.img"), 0); !strings.Contains(r.stdout, "x.img: in use by a writer: checked its last commit (generation ") {
		t.Fatalf("fsck -n beside a writer: %q", r.stdout)
	}
}

func TestMissingDevice(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-m", "raid1", "a.img", "b.img"), 0)
	os.Mkdir(filepath.Join(dir, "away"), 0o755)
	os.Rename(filepath.Join(dir, "b.img"), filepath.Join(dir, "away", "b.img"))
	r := must(t, run(t, dir, "ddfs", "info", "a.img"), 1)
	// b.img was next to a.img at mkfs, so it has no path hint (FORMAT.md §4.3):
	// the message names it by devid and uuid, and says --degraded exists.
	if !strings.Contains(r.stderr, "device 2 (uuid ") || !strings.Contains(r.stderr, "--degraded") {
		t.Fatalf("stderr %q", r.stderr)
	}
	must(t, run(t, dir, "ddfs", "info", "--device", "away/b.img", "a.img"), 0)
	// fsck reports the missing device as the problem found (exit 4).
	ps := fsckProblems(t, must(t, run(t, dir, "fsck.ddfs", "--json", "a.img"), 4))
	if len(ps) != 1 || ps[0].Code != "DEV_MISSING" || ps[0].DevID != 2 {
		t.Fatalf("fsck problems %+v", ps)
	}
	must(t, run(t, dir, "fsck.ddfs", "a.img", "away/b.img"), 0)
	// A device made outside the first device's folder keeps a hint.
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-m", "raid1", "p.img", "away/q.img"), 0)
	must(t, run(t, dir, "ddfs", "info", "p.img"), 0)
}

// physical maps a logical address to the offset of each copy (non-striped chunks).
func physical(in info, logical uint64) (devs []uint64, offs []uint64) {
	for _, c := range in.Chunks {
		if logical >= c.Logical && logical < c.Logical+c.Length {
			for _, s := range c.Stripes {
				devs = append(devs, s.DevID)
				offs = append(offs, s.Offset+logical-c.Logical)
			}
		}
	}
	return
}

func flipAt(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	f.ReadAt(b, off)
	b[0] ^= 0xff
	f.WriteAt(b, off)
}

func TestCorruptionExitCodes(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "x.img")
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "x.img"), 0) // metadata dup
	in := getInfo(t, dir, "x.img")
	var fsRoot uint64
	for _, r := range in.Roots {
		if r.Tree == "fs" {
			fsRoot = r.Logical
		}
	}
	_, offs := physical(in, fsRoot)
	if len(offs) != 2 {
		t.Fatalf("dup fs root has %d copies", len(offs))
	}
	// One copy: reported, exit 4, the image still reads.
	flipAt(t, img, int64(offs[0])+1000)
	rep := fsckJSON(t, dir, 4, "x.img")
	if len(rep.Problems) != 1 || !rep.Problems[0].is("NODE_COPY_BAD", fsRoot, 0) || rep.Problems[0].Offset != offs[0] || rep.Problems[0].Pass != "node" {
		t.Fatalf("problems %+v", rep.Problems)
	}
	must(t, run(t, dir, "ddfs", "info", "x.img"), 0)
	// -p rewrites the bad copy from the good one: exit 1, then clean.
	rep = fsckJSON(t, dir, 1, "-p", "x.img")
	if len(rep.Problems) != 1 || !rep.Problems[0].Fixed {
		t.Fatalf("-p: %+v", rep.Problems)
	}
	must(t, run(t, dir, "fsck.ddfs", "x.img"), 0)
	// Both copies: exit 4 even with -y (nothing to copy from), naming
	// both copies.
	flipAt(t, img, int64(offs[0])+1000)
	flipAt(t, img, int64(offs[1])+77)
	rep = fsckJSON(t, dir, 4, "-y", "x.img")
	copies := map[int]bool{}
	for _, p := range rep.Problems {
		if p.is("NODE_COPY_BAD", fsRoot, -1) && !p.Fixed {
			copies[*p.Copy] = true
		}
	}
	if !copies[0] || !copies[1] {
		t.Fatalf("problems %+v", rep.Problems)
	}
}

// fsckProblem is a problem as fsck.ddfs --json prints it.
type fsckProblem struct {
	Code    string `json:"code"`
	Pass    string `json:"pass"`
	Tree    string `json:"tree"`
	Logical uint64 `json:"logical"`
	DevID   uint64 `json:"devid"`
	Offset  uint64 `json:"offset"`
	Copy    *int   `json:"copy"`
	Path    string `json:"path"`
	Fixed   bool   `json:"fixed"`
	Warning bool   `json:"warning"`
}

// is matches code, logical and copy (-1: any copy).
func (p fsckProblem) is(code string, logical uint64, copy int) bool {
	return p.Code == code && p.Logical == logical && (copy < 0 || (p.Copy != nil && *p.Copy == copy))
}

// fsckJSON runs fsck.ddfs --json, requires exit code want and decodes
// the report.
func fsckJSON(t *testing.T, dir string, want int, args ...string) (rep struct{ Problems []fsckProblem }) {
	t.Helper()
	r := must(t, run(t, dir, "fsck.ddfs", append([]string{"--json"}, args...)...), want)
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestPrimarySuperblockFlip(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "x.img"), 0)
	flipAt(t, filepath.Join(dir, "x.img"), 64<<10+300)
	// A problem, not a warning (issue 12): the primary is the copy every
	// other tool reads first. Readers still open the set from copy 1.
	rep := fsckJSON(t, dir, 4, "x.img")
	if len(rep.Problems) != 1 || rep.Problems[0].Code != "SUPER_BAD" || rep.Problems[0].Warning || rep.Problems[0].Offset != 65536 || rep.Problems[0].DevID != 1 {
		t.Fatalf("fsck: %+v", rep.Problems)
	}
	must(t, run(t, dir, "ddfs", "info", "x.img"), 0)
}

func TestUnknownIncompatRefused(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "x.img")
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "x.img"), 0)
	f, _ := os.OpenFile(img, os.O_RDWR, 0)
	for _, off := range []int64{64 << 10, 64 << 20} {
		b := make([]byte, format.SuperblockSize)
		f.ReadAt(b, off)
		b[65] |= 0x80 // incompat bit 15: unknown
		sum := format.Checksum(format.CsumCRC32C, b[32:])
		copy(b, sum[:])
		f.WriteAt(b, off)
	}
	f.Close()
	r := must(t, run(t, dir, "ddfs", "info", "x.img"), 1)
	if !strings.Contains(r.stderr, "incompatible features 0x8000") {
		t.Fatalf("stderr %q", r.stderr)
	}
}
