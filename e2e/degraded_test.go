package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// randomTree writes files of assorted sizes (empty, inline, multi-MiB)
// under dir/src and returns their contents by relative path.
func randomTree(t *testing.T, dir string, seed uint64) map[string][]byte {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	files := map[string][]byte{}
	for i, size := range []int{0, 1, 100, 5000, 70000, 300000, 3 << 20} {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		name := fmt.Sprintf("src/d%d/f%d", i%3, i)
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	return files
}

func fsckProblems(t *testing.T, r result) []fsckProblem {
	t.Helper()
	var rep struct {
		Problems []fsckProblem `json:"problems"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("fsck --json: %v\n%s", err, r.stdout)
	}
	return rep.Problems
}

// One device file of a mirrored set deleted: without --degraded every
// tool refuses and names the flag; with it every file reads back
// identical, new files can be written (into chunks on the present
// devices, listed by df as fallbacks), and fsck reports exactly the
// missing device (exit 4), checking everything else with --degraded.
func TestDegradedPerProfile(t *testing.T) {
	for _, tc := range mirroredSets {
		t.Run(tc.profile, func(t *testing.T) {
			dir := t.TempDir()
			imgs := mkfsProfile(t, dir, "1G", tc.profile, tc.devs)
			files := randomTree(t, dir, uint64(tc.devs))
			must(t, run(t, dir, "ddfs", "cp", "-r", "src", "d0.img:/"), 0)
			gone := imgs[tc.devs-1]
			if err := os.Remove(filepath.Join(dir, gone)); err != nil {
				t.Fatal(err)
			}
			for _, cmd := range [][]string{
				{"ddfs", "cat", "d0.img:/src/d1/f1"},
				{"ddfs", "mkdir", "d0.img:/x"},
				{"dedupe-tool", "status", "d0.img"},
				{"trimtool", "--dry-run", "d0.img"},
			} {
				r := must(t, run(t, dir, cmd[0], cmd[1:]...), 1)
				// A member made next to the first has no path hint (FORMAT.md
				// §4.3): it is named by devid and uuid.
				if name := fmt.Sprintf("device %d (uuid ", tc.devs); !strings.Contains(r.stderr, "--degraded") || !strings.Contains(r.stderr, name) {
					t.Fatalf("%v: %q does not name %q and --degraded", cmd, r.stderr, name)
				}
			}
			must(t, run(t, dir, "ddfs", "cp", "-a", "--degraded", "d0.img:/src", "out"), 0)
			for name, b := range files {
				got, err := os.ReadFile(filepath.Join(dir, "out", strings.TrimPrefix(name, "src/")))
				if err != nil || !bytes.Equal(got, b) {
					t.Fatalf("%s read back degraded: %v", name, err)
				}
			}
			must(t, run(t, dir, "dedupe-tool", "status", "--degraded", "d0.img"), 0)
			must(t, run(t, dir, "trimtool", "--dry-run", "--degraded", "d0.img"), 0)
			// Writes: a new tree, read back.
			more := randomTree(t, filepath.Join(dir, "more"), 99)
			must(t, run(t, dir, "ddfs", "cp", "-r", "--degraded", "more/src", "d0.img:/new"), 0)
			must(t, run(t, dir, "ddfs", "cp", "-a", "--degraded", "d0.img:/new", "out2"), 0)
			for name, b := range more {
				got, err := os.ReadFile(filepath.Join(dir, "out2", strings.TrimPrefix(name, "src/")))
				if err != nil || !bytes.Equal(got, b) {
					t.Fatalf("%s written degraded: %v", name, err)
				}
			}
			var df struct {
				Devices []struct {
					DevID   uint64 `json:"devid"`
					Missing bool   `json:"missing"`
				} `json:"devices"`
				Fallbacks []struct {
					Profile string   `json:"profile"`
					DevIDs  []uint64 `json:"devids"`
				} `json:"fallbacks"`
			}
			r := must(t, run(t, dir, "ddfs", "df", "--json", "--degraded", "d0.img"), 0)
			if err := json.Unmarshal([]byte(r.stdout), &df); err != nil || len(df.Fallbacks) == 0 {
				t.Fatalf("df after degraded writes: %v %s", err, r.stdout)
			}
			for _, d := range df.Devices {
				if d.Missing != (d.DevID == uint64(tc.devs)) {
					t.Fatalf("df: device %d missing %v", d.DevID, d.Missing)
				}
			}
			for _, fb := range df.Fallbacks {
				for _, id := range fb.DevIDs {
					if id == uint64(tc.devs) {
						t.Fatalf("new chunk %+v on the missing device", fb)
					}
				}
			}
			for _, args := range [][]string{{"--json", "d0.img"}, {"--json", "--degraded", "--check-data", "d0.img"}} {
				ps := fsckProblems(t, must(t, run(t, dir, "fsck.ddfs", args...), 4))
				if len(ps) != 1 || ps[0].Code != "DEV_MISSING" || ps[0].DevID != uint64(tc.devs) {
					t.Fatalf("fsck %v: problems %+v, want only device %d missing", args, ps, tc.devs)
				}
			}
		})
	}
}

// permSet makes a raid1 set a.img b.img that another user may write,
// but for b.img's mode; the tools run as that user (setpriv: needs root,
// as permissions do not bind root).
func permSet(t *testing.T, bMode os.FileMode) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to run the tools as another user")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("no setpriv")
	}
	dir, err := os.MkdirTemp("/tmp", "ddfs-perm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-d", "raid1", "-m", "raid1", "a.img", "b.img"), 0)
	os.Chmod(filepath.Join(dir, "a.img"), 0o666)
	os.Chmod(filepath.Join(dir, "b.img"), bMode)
	return dir
}

// A member that exists but cannot be opened for writing is reported as
// such (permission denied, with the --degraded hint), not as "not found",
// and --degraded goes on without it. Needs root to drop to another user,
// as permissions do not bind root.
func TestUnwritableMember(t *testing.T) {
	dir := permSet(t, 0o444)
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", filepath.Join(binDir, "ddfs"), "mkdir", "a.img:/x")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(strings.ToLower(string(out)), "permission denied") || strings.Contains(string(out), "not found") || !strings.Contains(string(out), "--degraded") {
		t.Fatalf("mkdir with b.img read-only: %v: %s", err, out)
	}
	// With --degraded the writer goes on without the member it cannot open.
	cmd = exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", filepath.Join(binDir, "ddfs"), "mkdir", "--degraded", "a.img:/x")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mkdir --degraded: %v: %s", err, out)
	}
	must(t, run(t, dir, "ddfs", "stat", "a.img:/x"), 0)
}

// TestUnreadableMember: a member next to the set that cannot be read at
// all (mode 000, another user) is named with its reason by the tools and
// fsck, never "not found".
func TestUnreadableMember(t *testing.T) {
	dir := permSet(t, 0o000)
	for _, c := range [][]string{{"ddfs", "ls", "a.img:/"}, {"fsck.ddfs", "a.img"}} {
		cmd := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", filepath.Join(binDir, c[0])}, c[1:]...)...)
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput()
		if s := string(out); !strings.Contains(s, "could not read b.img: permission denied") || strings.Contains(s, "not found") {
			t.Fatalf("%v with b.img unreadable: %s", c, out)
		}
	}
}

// Data with no surviving copy (raid0, a member gone) reads as an I/O
// error naming the file, never as "not found"; the file is still listed.
func TestDegradedLostDataIsEIO(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "512M", "-d", "raid0", "-m", "raid1", "a.img", "b.img"), 0)
	randomTree(t, dir, 5)
	must(t, run(t, dir, "ddfs", "cp", "-r", "src", "a.img:/"), 0)
	if err := os.Remove(filepath.Join(dir, "b.img")); err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "ddfs", "ls", "--degraded", "a.img:/src/d0/f6"), 0)
	for _, cmd := range [][]string{{"cat", "--degraded", "a.img:/src/d0/f6"}, {"cp", "--degraded", "a.img:/src/d0/f6", "out"}} {
		r := must(t, run(t, dir, "ddfs", cmd...), 1)
		if want := "a.img:/src/d0/f6: Input/output error\n"; !strings.HasSuffix(r.stderr, want) {
			t.Fatalf("%v: %q, want it to end in %q", cmd, r.stderr, want)
		}
	}
}

// TestDegradedNewGroupsCounted: the first degraded write on small devices
// makes a metadata and a system chunk in one transaction; the block group
// item of the first must count the node its own recording took (review:
// fsck found BG_USED one node short, for good).
func TestDegradedNewGroupsCounted(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-d", "raid1", "-m", "raid1", "a.img", "b.img"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "a.img:/x"), 0)
	os.Mkdir(filepath.Join(dir, "away"), 0o755)
	if err := os.Rename(filepath.Join(dir, "b.img"), filepath.Join(dir, "away/b.img")); err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "ddfs", "mkdir", "--degraded", "a.img:/d"), 0)
	ps := fsckProblems(t, must(t, run(t, dir, "fsck.ddfs", "--json", "--degraded", "a.img"), 4))
	if len(ps) != 1 || ps[0].Code != "DEV_MISSING" {
		t.Fatalf("problems %+v", ps)
	}
	if err := os.Rename(filepath.Join(dir, "away/b.img"), filepath.Join(dir, "b.img")); err != nil {
		t.Fatal(err)
	}
	for _, p := range fsckProblems(t, run(t, dir, "fsck.ddfs", "--json", "a.img")) {
		if p.Pass != "superblock" && p.Code != "CHUNK_BELOW_PROFILE" { // the chunks the degraded mkdir made
			t.Fatalf("device back: %+v", p)
		}
	}
}

// mirroredSets are the profiles that survive losing one device, each on
// the fewest devices it needs.
var mirroredSets = []struct {
	profile string
	devs    int
}{{"raid1", 2}, {"raid1c3", 3}, {"raid10", 4}}

// lostLast makes a set of devs images d0.img… of size at profile, runs
// fill, and deletes the last image.
func lostLast(t *testing.T, dir, size, profile string, devs int, fill func()) {
	t.Helper()
	imgs := mkfsProfile(t, dir, size, profile, devs)
	fill()
	if err := os.Remove(filepath.Join(dir, imgs[devs-1])); err != nil {
		t.Fatal(err)
	}
}

// mkfsProfile makes a set of devs images d0.img… of size each, data and
// metadata both at profile, and returns their names.
func mkfsProfile(t *testing.T, dir, size, profile string, devs int) []string {
	t.Helper()
	var imgs []string
	for i := 0; i < devs; i++ {
		imgs = append(imgs, fmt.Sprintf("d%d.img", i))
	}
	must(t, run(t, dir, "mkfs.ddfs", append([]string{"-q", "-b", size, "-d", profile, "-m", profile}, imgs...)...), 0)
	return imgs
}

// On small devices (256 MiB) the first degraded write makes a data, a
// metadata and a system chunk at once; they must fit on the devices left
// (review: raid1 failed with ENOSPC for the system chunk while df showed
// 146 MiB unallocated, the chunks being sized from the whole set). A cp
// whose commit fails names IMAGE:PATH and keeps the reason.
func TestDegradedSmallDevices(t *testing.T) {
	for _, tc := range mirroredSets {
		t.Run(tc.profile, func(t *testing.T) {
			dir := t.TempDir()
			var files map[string][]byte
			lostLast(t, dir, "256M", tc.profile, tc.devs, func() {
				files = randomTree(t, dir, 7)
				must(t, run(t, dir, "ddfs", "cp", "-r", "src", "d0.img:/"), 0)
			})
			small := bytes.Repeat([]byte("degraded"), 100000/8)
			os.WriteFile(filepath.Join(dir, "small"), small, 0o644)
			must(t, run(t, dir, "ddfs", "cp", "--degraded", "small", "d0.img:/x"), 0)
			if got := must(t, run(t, dir, "ddfs", "cat", "--degraded", "d0.img:/x"), 0).stdout; got != string(small) {
				t.Fatalf("/x read back: %d bytes, want %d", len(got), len(small))
			}
			must(t, run(t, dir, "ddfs", "cp", "-a", "--degraded", "d0.img:/src", "out"), 0)
			for name, b := range files {
				got, err := os.ReadFile(filepath.Join(dir, "out", strings.TrimPrefix(name, "src/")))
				if err != nil || !bytes.Equal(got, b) {
					t.Fatalf("%s read back degraded: %v", name, err)
				}
			}
			ps := fsckProblems(t, must(t, run(t, dir, "fsck.ddfs", "--json", "--degraded", "--check-data", "d0.img"), 4))
			if len(ps) != 1 || ps[0].Code != "DEV_MISSING" {
				t.Fatalf("fsck: problems %+v, want only the missing device", ps)
			}
			r := must(t, runEnv(t, dir, []string{"DDFS_FAULT=write-enospc:0"}, "ddfs", "cp", "--degraded", "small", "d0.img:/y"), 1)
			if !strings.HasPrefix(r.stderr, "ddfs: cp: d0.img:/y: ") || !strings.HasSuffix(r.stderr, ": no space left on device\n") {
				t.Fatalf("cp out of space: %q, want 'ddfs: cp: d0.img:/y: REASON: no space left on device'", r.stderr)
			}
		})
	}
}

// TestTruncatedMember: a member image truncated below the size the set
// gave it is treated as missing: writers refused up front with a message
// naming the file, its size and --degraded (not an I/O error half-way
// through a commit); with --degraded the set works without it.
func TestTruncatedMember(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-m", "raid1", "-d", "raid1", "a.img", "b.img"), 0)
	if err := os.Truncate(filepath.Join(dir, "b.img"), 100<<20); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 60<<20/16)
	if err := os.WriteFile(filepath.Join(dir, "big"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	r := must(t, run(t, dir, "ddfs", "cp", "big", "a.img:/big"), 1)
	if !names(r, "b.img", "104857600", "--degraded") {
		t.Fatalf("stderr %q", r.stderr)
	}
	must(t, run(t, dir, "ddfs", "cp", "--degraded", "big", "a.img:/big"), 0)
	if got := must(t, run(t, dir, "ddfs", "cat", "--degraded", "a.img:/big"), 0).stdout; got != string(big) {
		t.Fatalf("read back %d bytes, want %d", len(got), len(big))
	}
}

// TestOpenErrorNamesImage: a set that cannot be opened (a member gone) is
// named first on the error line, as every other error of the command:
// "ddfs: CMD: IMAGE: device 2 (...) not found ...".
func TestOpenErrorNamesImage(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-m", "raid1", "-d", "raid1", "a.img", "b.img"), 0)
	if err := os.Rename(filepath.Join(dir, "b.img"), filepath.Join(t.TempDir(), "b.img")); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{{"ls", "a.img:/"}, {"cat", "a.img:/x"}, {"mkdir", "a.img:/x"}, {"df", "a.img"}, {"scrub", "a.img"}} {
		r := must(t, run(t, dir, "ddfs", c...), 1)
		if want := "ddfs: " + c[0] + ": a.img: device 2 "; !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: %q, want a line starting %q", c, r.stderr, want)
		}
	}
	if r := must(t, run(t, dir, "dedupe-tool", "run", "a.img"), 1); !strings.HasPrefix(r.stderr, "dedupe-tool: run: a.img: device 2 ") {
		t.Errorf("dedupe-tool run: %q", r.stderr)
	}
}

// TestStaleMemberBack: a member back after the set went on degraded for
// more commits than its backup roots remember is refused with the way
// out (move it away, --degraded, replace), not as a copy to name with
// --device; that way out works.
func TestStaleMemberBack(t *testing.T) {
	dir, away := t.TempDir(), t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-m", "raid1", "-d", "raid1", "a.img", "b.img"), 0)
	if err := os.Rename(filepath.Join(dir, "b.img"), filepath.Join(away, "b.img")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		must(t, run(t, dir, "ddfs", "mkdir", "--degraded", fmt.Sprintf("a.img:/d%d", i)), 0)
	}
	if err := os.Rename(filepath.Join(away, "b.img"), filepath.Join(dir, "b.img")); err != nil {
		t.Fatal(err)
	}
	r := must(t, run(t, dir, "ddfs", "ls", "a.img:/"), 1)
	if !names(r, "b.img", "generation 1", "move it away", "--degraded", "device replace") {
		t.Fatalf("stale member: %q", r.stderr)
	}
	if err := os.Rename(filepath.Join(dir, "b.img"), filepath.Join(away, "b.img")); err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "ddfs", "device", "replace", "--degraded", "a.img", "2", "c.img"), 0)
	restoreBelowProfile(t, dir, "a.img") // what the degraded mkdirs made
	must(t, run(t, dir, "fsck.ddfs", "a.img"), 0)
}
