package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ddfs/ddfs/pkg/device"
)

// batchFleet is the images of the batch tests: clean ones, one with a
// damaged node copy, one another writer holds, one whose second device is
// gone, and a file that is no ddfs filesystem, in list order.
type batchFleet struct {
	dir                           string
	list                          []string // every operand, in order
	damaged, busy, missing, notFS string
	clean                         []string
}

// batchImages makes n operands (n-4 clean) of 64 MiB each, allocated on
// the host (fallocate) so that a trim gives space back: n-2 single
// images, the mirrored pair and the file that is no filesystem.
func batchImages(t *testing.T, n int) *batchFleet {
	t.Helper()
	dir := t.TempDir()
	f := &batchFleet{dir: dir}
	for i := 0; i < n-2; i++ {
		name := fmt.Sprintf("img%02d.img", i)
		fd, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Fallocate(int(fd.Fd()), 0, 0, 64<<20); err != nil {
			t.Fatal(err)
		}
		fd.Close()
		must(t, run(t, dir, "mkfs.ddfs", "-q", "-K", name), 0) // -K: the fallocated blocks stay for trimtool
		f.list = append(f.list, name)
	}
	// A mirrored pair in its own folder, its second device moved away.
	os.MkdirAll(filepath.Join(dir, "pair", "away"), 0o755)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "64M", "-m", "raid1", "pair/m0.img", "pair/m1.img"), 0)
	os.Rename(filepath.Join(dir, "pair", "m1.img"), filepath.Join(dir, "pair", "away", "m1.img"))
	os.WriteFile(filepath.Join(dir, "junk.img"), []byte(strings.Repeat("not a filesystem\n", 1<<12)), 0o644)
	f.damaged, f.busy, f.missing, f.notFS = f.list[3], f.list[7], "pair/m0.img", "junk.img"
	// Interleave the odd ones with the clean, so order is tested too.
	f.list = append(f.list[:20], append([]string{f.missing}, append(f.list[20:30], append([]string{f.notFS}, f.list[30:]...)...)...)...)
	for _, p := range f.list {
		if p != f.damaged && p != f.busy && p != f.missing && p != f.notFS {
			f.clean = append(f.clean, p)
		}
	}
	in := getInfo(t, dir, f.damaged)
	for _, r := range in.Roots {
		if r.Tree == "fs" {
			_, offs := physical(in, r.Logical)
			flipAt(t, filepath.Join(dir, f.damaged), int64(offs[0])+1000)
		}
	}
	writeList(t, filepath.Join(dir, "list"), f.list)
	return f
}

func writeList(t *testing.T, path string, paths []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(paths, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hold takes the writer's lock of image as another writer would.
func hold(t *testing.T, image string) device.Device {
	t.Helper()
	dev, err := device.Open(image, device.OpenOptions{Mode: device.ReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	return dev
}

// setLine is one JSON Lines report of a batch run.
type setLine struct {
	Path     string        `json:"path"`
	Exit     int           `json:"exit"`
	Error    string        `json:"error"`
	Problems []fsckProblem `json:"problems"`
}

// jsonLines parses a batch run's stdout: one object per line.
func jsonLines(t *testing.T, out string) []setLine {
	t.Helper()
	var lines []setLine
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		var s setLine
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatalf("not a JSON line: %v\n%s", err, l)
		}
		lines = append(lines, s)
	}
	return lines
}

// TestBatchFsck: fifty operands through fsck.ddfs -j 2 --json: one line
// per set in operand order with its own code (busy: checked beside its
// writer, 0 with beside_writer; missing device: 4; not ddfs: 8; damaged:
// 4) and the codes OR-ed as the exit status; a repair (-y) of the busy
// set is skipped (8), and --wait lets it through once its writer leaves;
// --shard splits the list.
func TestBatchFsck(t *testing.T) {
	f := batchImages(t, 50)
	dev := hold(t, filepath.Join(f.dir, f.busy))
	r := must(t, run(t, f.dir, "fsck.ddfs", "-j", "2", "--json", "--from", "list"), 4|8)
	lines := jsonLines(t, r.stdout)
	if len(lines) != len(f.list) {
		t.Fatalf("%d lines for %d sets\n%s", len(lines), len(f.list), r.stdout)
	}
	want := map[string]int{f.damaged: 4, f.busy: 0, f.missing: 4, f.notFS: 8}
	for i, l := range lines {
		if l.Path != f.list[i] || l.Exit != want[l.Path] {
			t.Errorf("line %d: %s exit %d (%s), want %s exit %d", i, l.Path, l.Exit, l.Error, f.list[i], want[f.list[i]])
		}
	}
	doc := documentedKeys(t)
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var v any
		json.Unmarshal([]byte(l), &v)
		found := map[string]bool{}
		jsonKeys(v, map[string]bool{"tree_nodes": true}, found)
		for k := range found {
			if !doc[k] {
				t.Errorf("key %q is not in docs/json.md", k)
			}
		}
	}
	byPath := map[string]setLine{}
	for _, l := range lines {
		byPath[l.Path] = l
	}
	if p := byPath[f.damaged].Problems; len(p) != 1 || p[0].Code != "NODE_COPY_BAD" {
		t.Errorf("damaged: %+v", p)
	}
	if p := byPath[f.missing].Problems; len(p) != 1 || p[0].Code != "DEV_MISSING" {
		t.Errorf("missing: %+v", p)
	}
	if !strings.Contains(r.stdout, `{"path":"`+f.busy+`","exit":0,`) || !strings.Contains(r.stdout, `"beside_writer":true`) {
		t.Errorf("busy: not checked beside its writer: %s", r.stdout)
	}
	if !strings.Contains(r.stderr, "fsck.ddfs: 50 sets checked: 47 clean, 0 corrected, 2 with problems left, 1 not checked; exit 12") {
		t.Errorf("summary: %s", r.stderr)
	}
	// A repair of a set still busy when --wait runs out says so.
	r = must(t, run(t, f.dir, "fsck.ddfs", "-y", "--json", "--wait=1s", f.busy, f.clean[0]), 8)
	if l := jsonLines(t, r.stdout); len(l) != 2 || l[0].Exit != 8 || !strings.HasSuffix(l[0].Error, " is in use by process "+fmt.Sprint(os.Getpid())+" (skipped: still busy after --wait=1s)") {
		t.Errorf("--wait=1s, busy: %s", r.stdout)
	}
	// Text: every line names its set; the busy set with --wait=30s is
	// repaired once its writer closes.
	go func() { time.Sleep(500 * time.Millisecond); dev.Close() }()
	r = must(t, run(t, f.dir, "fsck.ddfs", "-y", "-j", "2", "--wait=30s", f.clean[0], f.busy, f.clean[1]), 0)
	if got := strings.Count(r.stdout, ": clean\n"); got != 3 || !strings.HasPrefix(r.stdout, "fsck.ddfs: "+f.clean[0]+": ") {
		t.Errorf("--wait: %s", r.stdout)
	}
	checkShards(t, f)
	// Two operands of one set are one set; a single set prints as before.
	r = must(t, run(t, f.dir, "fsck.ddfs", "--json", "pair/m0.img", "pair/away/m1.img"), 0)
	if strings.Contains(r.stdout, `"exit"`) || !strings.HasPrefix(r.stdout, "{\n  \"uuid\"") {
		t.Errorf("one set: %s", r.stdout)
	}
}

// TestBatchTrim: trimtool --from list -j 2 gives every trimmable image's
// space back, skips the busy one, and exits 1 naming how many were not
// trimmed.
func TestBatchTrim(t *testing.T) {
	f := batchImages(t, 50)
	dev := hold(t, filepath.Join(f.dir, f.busy))
	defer dev.Close()
	before := map[string]int64{}
	for _, p := range f.list {
		before[p] = allocated(t, filepath.Join(f.dir, p))
	}
	r := must(t, run(t, f.dir, "trimtool", "--from", "list", "-j", "2"), 1)
	// Not trimmed: busy, missing a device (no --degraded), not ddfs.
	// The damaged image's bad node copy is healed on the way (the walk of
	// every tree reads it) and said so on a line of its own.
	heals := strings.Count(r.stderr, "rewritten from a good copy\n")
	if !strings.Contains(r.stderr, "trimtool: 3 of 50 sets not trimmed\n") || strings.Count(r.stderr, "\n")-heals != 4 {
		t.Fatalf("stderr: %s", r.stderr)
	}
	for _, p := range append([]string{f.damaged}, f.clean...) {
		if a := allocated(t, filepath.Join(f.dir, p)); a > before[p]-32<<20 {
			t.Errorf("%s: %d bytes allocated after trimming, %d before", p, a, before[p])
		}
	}
	if a := allocated(t, filepath.Join(f.dir, f.busy)); a != before[f.busy] {
		t.Errorf("busy image trimmed: %d -> %d", before[f.busy], a)
	}
	dev.Close()
	r = must(t, run(t, f.dir, "trimtool", "--json", "-j", "2", f.busy, f.clean[0]), 0)
	if l := jsonLines(t, r.stdout); len(l) != 2 || l[0].Path != f.busy || l[1].Path != f.clean[0] || l[0].Exit != 0 {
		t.Fatalf("json: %s", r.stdout)
	}
}

// TestBatchInterrupt: SIGINT after the first report of a repair run
// starts no more sets, prints the summary and exits with 32; every image
// is consistent after it (a later check finds nothing new). One worker
// and a busy eighth set it waits for keep sets unstarted when the signal
// comes, however fast the machine.
func TestBatchInterrupt(t *testing.T) {
	f := batchImages(t, 50)
	dev := hold(t, filepath.Join(f.dir, f.busy))
	cmd := exec.Command(filepath.Join(binDir, "fsck.ddfs"), "-y", "-j", "1", "--wait=60s", "--json", "--from", "list")
	cmd.Dir = f.dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatal("no report")
	}
	// SIGINT as from a terminal; SIGTERM when this test runs with SIGINT
	// ignored (a background job): the tool inherits that and rightly
	// keeps ignoring it.
	sig := os.Signal(os.Interrupt)
	if signal.Ignored(os.Interrupt) {
		sig = syscall.SIGTERM
	}
	cmd.Process.Signal(sig)
	n := 1
	for sc.Scan() {
		n++
	}
	err = cmd.Wait()
	dev.Close()
	code := cmd.ProcessState.ExitCode()
	m := regexp.MustCompile(`interrupted: (\d+) sets? checked, (\d+) not started`).FindStringSubmatch(stderr.String())
	if code&32 == 0 || m == nil || m[1] != fmt.Sprint(n) || m[2] == "0" {
		t.Fatalf("exit %d (%v), %d reports\n%s", code, err, n, stderr.String())
	}
	r := run(t, f.dir, "fsck.ddfs", "-j", "2", "--json", "--from", "list")
	for _, l := range jsonLines(t, r.stdout) {
		ok := l.Exit == 0 || l.Path == f.missing || l.Path == f.notFS
		if l.Path == f.damaged { // repaired, or not reached: its one problem
			ok = l.Exit == 0 || len(l.Problems) == 1 && l.Problems[0].Code == "NODE_COPY_BAD"
		}
		if !ok {
			t.Errorf("%s after the interrupt: exit %d %s %+v", l.Path, l.Exit, l.Error, l.Problems)
		}
	}
	// Started as sh starts `cmd &` (SIGINT ignored), the run does not stop
	// on SIGINT (it used to un-ignore it and stop as interrupted).
	bg := ignoringSIGINT(filepath.Join(binDir, "fsck.ddfs"), "-j", "2", "--json", "--from", "list")
	bg.Dir = f.dir
	var bgOut strings.Builder
	bg.Stdout = &bgOut
	signalUntilExit(t, bg, syscall.SIGINT)
	if code := bg.ProcessState.ExitCode(); code&32 != 0 || len(jsonLines(t, bgOut.String())) != len(f.list) {
		t.Fatalf("SIGINT ignored at start: exit %d, %d of %d reports", code, len(jsonLines(t, bgOut.String())), len(f.list))
	}
}

// checkShards: shards 0..3 of 4 (the last two as a Kubernetes pod would
// name them: auto with JOB_COMPLETION_INDEX and JOB_COMPLETIONS, auto/4
// with JOB_COMPLETION_INDEX) report every set exactly once between them.
func checkShards(t *testing.T, f *batchFleet) {
	seen := map[string]int{}
	for i := 0; i < 4; i++ {
		shard := fmt.Sprintf("%d/4", i)
		cmd := exec.Command(filepath.Join(binDir, "fsck.ddfs"), "--json", "-j", "2", "--shard", shard, "--from", "list")
		switch i {
		case 2: // N from the environment too, as a Job's manifest may set it
			cmd.Args[5] = "auto"
			cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX=2", "JOB_COMPLETIONS=4")
		case 3:
			cmd.Args[5] = "auto/4"
			cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX=3")
		}
		cmd.Dir = f.dir
		r := runCmd(t, cmd)
		lines := jsonLines(t, r.stdout)
		if len(lines) == 0 || len(lines) == len(f.list) {
			t.Errorf("shard %s: %d of %d sets", shard, len(lines), len(f.list))
		}
		if !strings.Contains(r.stderr, fmt.Sprintf("(this shard's %d of 50)", len(lines))) {
			t.Errorf("shard %s: %s", shard, r.stderr)
		}
		for _, l := range lines {
			seen[l.Path]++
		}
	}
	for _, p := range f.list {
		if seen[p] != 1 {
			t.Errorf("%s reported by %d shards", p, seen[p])
		}
	}
	r := must(t, run(t, f.dir, "fsck.ddfs", "--shard", "4/4", "--from", "list"), 16)
	if !strings.Contains(r.stderr, "from 0 to 3") {
		t.Errorf("--shard 4/4: %s", r.stderr)
	}
}

// TestBatchCopies: a copy of an image (and of a mirrored pair) named
// beside its original is a set of its own, so both are checked and
// trimmed; two paths to one file (./a.img, a hard link, a symlink) are
// one operand.
func TestBatchCopies(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "64M", "a.img"), 0)
	os.Mkdir(filepath.Join(dir, "p"), 0o755)
	os.Mkdir(filepath.Join(dir, "c"), 0o755)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "64M", "-m", "raid1", "p/m0.img", "p/m1.img"), 0)
	copyFile(t, filepath.Join(dir, "a.img"), filepath.Join(dir, "a-copy.img"))
	for _, m := range []string{"m0.img", "m1.img"} {
		copyFile(t, filepath.Join(dir, "p", m), filepath.Join(dir, "c", m))
	}
	if err := os.Link(filepath.Join(dir, "a.img"), filepath.Join(dir, "a-link.img")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.img", filepath.Join(dir, "a-sym.img")); err != nil {
		t.Fatal(err)
	}
	ops := []string{"a.img", "a-copy.img", "./a.img", "a-link.img", "p/m0.img", "c/m0.img", "p/m1.img", "c/m1.img", "a-sym.img"}
	want := []string{"a.img", "a-copy.img", "p/m0.img", "c/m0.img"}
	for _, tool := range []string{"fsck.ddfs", "trimtool"} {
		r := must(t, run(t, dir, tool, append([]string{"--json", "-j", "2"}, ops...)...), 0)
		lines := jsonLines(t, r.stdout)
		var got []string
		for _, l := range lines {
			if l.Exit != 0 {
				t.Errorf("%s: %s exit %d %s", tool, l.Path, l.Exit, l.Error)
			}
			got = append(got, l.Path)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: sets %v, want %v\n%s", tool, got, want, r.stderr)
		}
	}
}

// TestBatchVerbose: in a batch run every -v line of a set starts with
// the set's first path (fsck's tree counts, trimtool's per-device lines
// of a mirrored pair, the second device's too).
func TestBatchVerbose(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "64M", "a.img"), 0)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "64M", "-m", "raid1", "m0.img", "m1.img"), 0)
	for _, tool := range []string{"fsck.ddfs", "trimtool"} {
		r := must(t, run(t, dir, tool, "-v", "a.img", "m0.img"), 0)
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		if tool == "trimtool" { // its count line ends the run
			if n := len(lines) - 1; lines[n] != "trimtool: 2 of 2 sets trimmed" {
				t.Errorf("trimtool: last line %q", lines[n])
			}
			lines = lines[:len(lines)-1]
		}
		want := map[string]int{"a.img": 0, "m0.img": 0}
		for _, l := range lines {
			set, _, _ := strings.Cut(strings.TrimPrefix(l, "fsck.ddfs: "), ": ")
			if _, ok := want[set]; !ok {
				t.Errorf("%s: line %q does not start with its set's path", tool, l)
			}
			want[set]++
		}
		// fsck: the state line and 3 trees each; trimtool: a line per
		// device and the pair's total.
		if n := map[string][2]int{"fsck.ddfs": {4, 4}, "trimtool": {1, 3}}[tool]; want["a.img"] != n[0] || want["m0.img"] != n[1] {
			t.Errorf("%s: lines per set %v, want %v\n%s", tool, want, n, r.stdout)
		}
	}
}

// TestBatchStats: in a batch run the --stats lines of each set start
// with the set's first path (a line per device: one for a.img, two for
// the pair), in every batch tool.
func TestBatchStats(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "64M", "a.img"), 0)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "64M", "-m", "raid1", "m0.img", "m1.img"), 0)
	for _, tool := range [][]string{{"fsck.ddfs"}, {"trimtool"}, {"ddfs", "df"}, {"ddfs", "info"}, {"dedupe-tool", "status"}} {
		r := must(t, run(t, dir, tool[0], append(tool[1:], "--stats", "a.img", "m0.img")...), 0)
		got := map[string]int{}
		for _, l := range strings.Split(r.stderr, "\n") {
			if set, rest, _ := strings.Cut(l, ": "); strings.HasPrefix(rest, "io: devid ") {
				got[set]++
			} else if strings.HasPrefix(l, "io: ") {
				t.Errorf("%s: %q names no set", tool, l)
			}
		}
		if got["a.img"] != 1 || got["m0.img"] != 2 || len(got) != 2 {
			t.Errorf("%s: io lines per set %v\n%s", tool, got, r.stderr)
		}
	}
}
