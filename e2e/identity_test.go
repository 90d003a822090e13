package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// digest is the sha256 of a file, to prove it was not touched.
func digest(t *testing.T, path string) [32]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	var d [32]byte
	copy(d[:], h.Sum(nil))
	return d
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// names reports whether the one-line error names every file.
func names(r result, files ...string) bool {
	for _, f := range files {
		if !strings.Contains(r.stderr, f) {
			return false
		}
	}
	return strings.Count(r.stderr, "\n") == 1
}

// TestCopiedSet is issue 11's data loss: a copied two-device set used next
// to the original. Discovery refuses instead of guessing, --device chooses,
// and after set-uuid both sets work on their own; the original is never
// written.
func TestCopiedSet(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-m", "raid1", "-d", "raid1", "a.img", "b.img"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "a.img:/orig"), 0)
	copyFile(t, filepath.Join(dir, "a.img"), filepath.Join(dir, "copy-a.img"))
	copyFile(t, filepath.Join(dir, "b.img"), filepath.Join(dir, "copy-b.img"))
	sumA, sumB := digest(t, filepath.Join(dir, "a.img")), digest(t, filepath.Join(dir, "b.img"))
	untouched := func(when string) {
		t.Helper()
		if digest(t, filepath.Join(dir, "a.img")) != sumA || digest(t, filepath.Join(dir, "b.img")) != sumB {
			t.Fatalf("%s: the original set was written", when)
		}
	}

	r := must(t, run(t, dir, "ddfs", "mkdir", "copy-a.img:/x"), 1)
	if !names(r, "copy-a.img", "a.img", "--device", "set-uuid") {
		t.Fatalf("refusal does not name the candidates and the way out: %q", r.stderr)
	}
	untouched("refused mkdir")
	must(t, run(t, dir, "ddfs", "ls", "a.img:/"), 1) // the original is as ambiguous
	must(t, run(t, dir, "fsck.ddfs", "copy-a.img"), 8)

	must(t, run(t, dir, "ddfs", "mkdir", "--device", "copy-b.img", "copy-a.img:/x"), 0)
	untouched("mkdir with --device")
	r = must(t, run(t, dir, "ddfs", "set-uuid", "--device", "copy-b.img", "copy-a.img"), 0)
	newUUID := strings.TrimSpace(r.stdout)
	if !regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(newUUID) {
		t.Fatalf("set-uuid printed %q", r.stdout)
	}
	untouched("set-uuid")

	// Two independent sets now, each found by scanning.
	if in := getInfo(t, dir, "copy-b.img"); in.UUID != newUUID || len(in.Devices) != 2 {
		t.Fatalf("copy: uuid %s, %d devices", in.UUID, len(in.Devices))
	}
	if got := must(t, run(t, dir, "ddfs", "ls", "copy-a.img:/"), 0).stdout; got != "orig\nx\n" {
		t.Fatalf("copy lists %q", got)
	}
	if got := must(t, run(t, dir, "ddfs", "ls", "a.img:/"), 0).stdout; got != "orig\n" {
		t.Fatalf("original lists %q", got)
	}
	must(t, run(t, dir, "ddfs", "mkdir", "a.img:/y"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "copy-b.img:/z"), 0)
	for _, img := range []string{"a.img", "copy-a.img", "b.img", "copy-b.img"} {
		must(t, run(t, dir, "fsck.ddfs", img), 0)
	}
	if got := must(t, run(t, dir, "ddfs", "ls", "copy-a.img:/"), 0).stdout; got != "orig\nx\nz\n" {
		t.Fatalf("copy lists %q", got)
	}
	// A chosen UUID, and --json.
	r = must(t, run(t, dir, "ddfs", "set-uuid", "--json", "a.img", "8c9a3e3e-0000-4000-8000-000000000001"), 0)
	if !strings.Contains(r.stdout, `"uuid": "8c9a3e3e-0000-4000-8000-000000000001"`) {
		t.Fatalf("--json: %s", r.stdout)
	}
	if in := getInfo(t, dir, "b.img"); in.UUID != "8c9a3e3e-0000-4000-8000-000000000001" {
		t.Fatalf("uuid %s", in.UUID)
	}
	must(t, run(t, dir, "fsck.ddfs", "b.img"), 0)
	must(t, run(t, dir, "ddfs", "set-uuid", "a.img", "not-a-uuid"), 2)
}

// TestSingleFileCopyRefused: one device of a two-device set copied next to
// it makes both the copy and the original ambiguous.
func TestSingleFileCopyRefused(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-m", "raid1", "a.img", "b.img"), 0)
	copyFile(t, filepath.Join(dir, "a.img"), filepath.Join(dir, "copy-a.img"))
	sumA, sumB := digest(t, filepath.Join(dir, "a.img")), digest(t, filepath.Join(dir, "b.img"))
	for _, img := range []string{"copy-a.img:/x", "a.img:/x", "b.img:/x"} {
		r := must(t, run(t, dir, "ddfs", "mkdir", img), 1)
		if !names(r, "copy-a.img", "a.img", "device 1") {
			t.Fatalf("%s: %q", img, r.stderr)
		}
	}
	if digest(t, filepath.Join(dir, "a.img")) != sumA || digest(t, filepath.Join(dir, "b.img")) != sumB {
		t.Fatal("the original set was written")
	}
	// A copy with a damaged primary still claims its device (copy 1 is valid).
	flipAt(t, filepath.Join(dir, "copy-a.img"), 64<<10+300)
	if r := must(t, run(t, dir, "ddfs", "mkdir", "a.img:/x"), 1); !names(r, "copy-a.img", "a.img") {
		t.Fatalf("damaged primary: %q", r.stderr)
	}
	// Named explicitly, the set opens.
	must(t, run(t, dir, "ddfs", "mkdir", "--device", "b.img", "a.img:/x"), 0)
	must(t, run(t, dir, "fsck.ddfs", "a.img", "b.img"), 0)
}

// TestNamedDeviceCopyRefused: a byte copy of a device in another folder
// (which no scan looks at), named with --device beside the original, is
// refused as ambiguous naming both files; neither is dropped silently
// and nothing is written.
func TestNamedDeviceCopyRefused(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-m", "raid1", "a.img", "b.img"), 0)
	os.Mkdir(filepath.Join(dir, "c"), 0o755)
	copyFile(t, filepath.Join(dir, "a.img"), filepath.Join(dir, "c/a.img"))
	sums := [3][32]byte{digest(t, filepath.Join(dir, "a.img")), digest(t, filepath.Join(dir, "b.img")), digest(t, filepath.Join(dir, "c/a.img"))}
	for _, args := range [][]string{
		{"ls", "--device", "c/a.img", "a.img:/"},
		{"mkdir", "--device", "c/a.img", "a.img:/x"},
	} {
		if r := must(t, run(t, dir, "ddfs", args...), 1); !names(r, "a.img and c/a.img", "device 1") {
			t.Fatalf("%v: %q", args, r.stderr)
		}
	}
	if [3][32]byte{digest(t, filepath.Join(dir, "a.img")), digest(t, filepath.Join(dir, "b.img")), digest(t, filepath.Join(dir, "c/a.img"))} != sums {
		t.Fatal("a device was written")
	}
}

// TestDivergedMemberRefused: a device of a copy that lived its own life
// (two commits of its own) next to the original's other device.
func TestDivergedMemberRefused(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-m", "raid1", "a.img", "b.img"), 0)
	os.Mkdir(filepath.Join(dir, "c"), 0o755)
	copyFile(t, filepath.Join(dir, "a.img"), filepath.Join(dir, "c/a.img"))
	copyFile(t, filepath.Join(dir, "b.img"), filepath.Join(dir, "c/b.img"))
	must(t, run(t, dir, "ddfs", "mkdir", "c/a.img:/z1"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "c/a.img:/z2"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "a.img:/w"), 0)
	sumB := digest(t, filepath.Join(dir, "b.img"))
	r := must(t, run(t, dir, "ddfs", "mkdir", "--device", "b.img", "c/a.img:/v"), 1)
	if !names(r, "b.img", "generation 2", "generation 3", "diverged") {
		t.Fatalf("stderr %q", r.stderr)
	}
	must(t, run(t, dir, "ddfs", "ls", "--device", "b.img", "c/a.img:/"), 1)
	must(t, run(t, dir, "fsck.ddfs", "c/a.img", "b.img"), 8)
	if digest(t, filepath.Join(dir, "b.img")) != sumB {
		t.Fatal("b.img was written")
	}
}

// rewriteSuper decodes the superblock copy at off, changes it and writes
// it back with a valid checksum.
func rewriteSuper(t *testing.T, path string, off int64, change func(*format.Superblock)) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, format.SuperblockSize)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	sb, err := format.UnmarshalSuperblock(b)
	if err != nil {
		t.Fatal(err)
	}
	change(sb)
	if b, err = format.MarshalSuperblock(sb); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestSameGenerationSupersDiffer: a superblock copy of the set's generation
// with other contents is corruption whichever copy or device it is on:
// fsck exits 4 every time, writers refuse, readers go on.
func TestSameGenerationSupersDiffer(t *testing.T) {
	cases := []struct {
		name   string
		file   string
		off    int64
		change func(*format.Superblock)
	}{
		{"copy 1 label", "a.img", 64 << 20, func(sb *format.Superblock) { sb.Label = "forged" }},
		{"primary of device 2 root set", "b.img", 64 << 10, func(sb *format.Superblock) { sb.Roots.Roots[2].Generation++ }},
		{"copy 1 of device 2 settings", "b.img", 64 << 20, func(sb *format.Superblock) { sb.Settings.SmallDataMax = 4096 }},
		{"primary bytes_used", "a.img", 64 << 10, func(sb *format.Superblock) { sb.BytesUsed += 4096 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-m", "raid1", "a.img", "b.img"), 0)
			must(t, run(t, dir, "ddfs", "mkdir", "a.img:/d"), 0)
			rewriteSuper(t, filepath.Join(dir, tc.file), tc.off, tc.change)
			for range 3 { // the same verdict on every run, from either device
				for _, img := range []string{"a.img", "b.img"} {
					r := must(t, run(t, dir, "fsck.ddfs", img), 4)
					if !strings.Contains(r.stdout, "differs from the set's superblock") {
						t.Fatalf("fsck: %s", r.stdout)
					}
				}
			}
			r := must(t, run(t, dir, "ddfs", "mkdir", "a.img:/e"), 1)
			if !names(r, tc.file, "differs") {
				t.Fatalf("writer: %q", r.stderr)
			}
			must(t, run(t, dir, "ddfs", "ls", "a.img:/"), 0)
		})
	}
}

// TestReproducibleAnyName: the same input, -U and SOURCE_DATE_EPOCH give
// byte-identical images whatever the output files are called.
func TestReproducibleAnyName(t *testing.T) {
	dir := t.TempDir()
	sampleTree(t, dir)
	env := []string{"SOURCE_DATE_EPOCH=1700000000"}
	u := "c0ffee00-1234-4321-8888-000000000002"
	// One folder per image: identical sets side by side are copies of each
	// other, which discovery refuses (tested below).
	for _, sub := range []string{"1", "2", "3", "4"} {
		os.Mkdir(filepath.Join(dir, sub), 0o755)
	}
	must(t, runEnv(t, dir, env, "mkfs.ddfs", "-q", "-b", "256M", "-U", u, "-r", "src", "1/r1.img"), 0)
	must(t, runEnv(t, dir, env, "mkfs.ddfs", "-q", "-b", "256M", "-U", u, "-r", "src", "2/r2.img"), 0)
	must(t, runEnv(t, dir, env, "mkfs.ddfs", "-q", "-b", "256M", "-U", u, "-m", "raid1", "-r", "src", "3/p1.img", "3/q1.img"), 0)
	must(t, runEnv(t, dir, env, "mkfs.ddfs", "-q", "-b", "256M", "-U", u, "-m", "raid1", "-r", "src", "4/x2.img", "4/y2.img"), 0)
	for _, pair := range [][2]string{{"1/r1.img", "2/r2.img"}, {"3/p1.img", "4/x2.img"}, {"3/q1.img", "4/y2.img"}} {
		a, _ := os.ReadFile(filepath.Join(dir, pair[0]))
		b, _ := os.ReadFile(filepath.Join(dir, pair[1]))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Fatalf("%s and %s differ", pair[0], pair[1])
		}
	}
	// -U on a multi-device set names the whole set.
	if in := getInfo(t, dir, "3/q1.img"); in.UUID != u || len(in.Devices) != 2 {
		t.Fatalf("uuid %s, %d devices", in.UUID, len(in.Devices))
	}
	must(t, run(t, dir, "fsck.ddfs", "3/p1.img"), 0)
	// Identical sets in one folder are copies of each other: refused until
	// one gets its own identity.
	os.Rename(filepath.Join(dir, "4/x2.img"), filepath.Join(dir, "3/x2.img"))
	os.Rename(filepath.Join(dir, "4/y2.img"), filepath.Join(dir, "3/y2.img"))
	must(t, run(t, dir, "fsck.ddfs", "3/p1.img"), 8)
	must(t, run(t, dir, "ddfs", "set-uuid", "--device", "3/y2.img", "3/x2.img"), 0)
	must(t, run(t, dir, "fsck.ddfs", "3/p1.img"), 0)
	must(t, run(t, dir, "fsck.ddfs", "3/y2.img"), 0)
}

// TestSetUUIDInterrupted: set-uuid failing at the Nth write (DDFS_FAULT)
// leaves a set that opens, fscks clean and takes writes; ddfs info shows
// the pending UUID and set-uuid without a UUID finishes the change.
func TestSetUUIDInterrupted(t *testing.T) {
	const u = "11111111-2222-4333-8444-555555555555"
	for _, n := range []string{"2", "3", "4", "6"} {
		t.Run("after "+n+" writes", func(t *testing.T) {
			dir := t.TempDir()
			must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-m", "raid1", "a.img", "b.img"), 0)
			must(t, run(t, dir, "ddfs", "mkdir", "a.img:/d"), 0)
			old := getInfo(t, dir, "a.img").UUID
			must(t, runEnv(t, dir, []string{"DDFS_FAULT=write-eio:" + n}, "ddfs", "set-uuid", "a.img", u), 1)
			var pending struct {
				UUID    string `json:"uuid"`
				NewUUID string `json:"new_uuid"`
			}
			r := must(t, run(t, dir, "ddfs", "info", "--json", "b.img"), 0)
			// Old identity with the change pending, or (failure among the
			// final superblock writes) the new one already.
			if err := json.Unmarshal([]byte(r.stdout), &pending); err != nil ||
				!(pending.UUID == old && pending.NewUUID == u || pending.UUID == u && pending.NewUUID == "") {
				t.Fatalf("after the failure: %+v (%v)", pending, err)
			}
			// A device whose final superblock writes failed lags a whole
			// generation: reported (exit 4) until the next commit.
			if r := run(t, dir, "fsck.ddfs", "a.img"); r.code != 0 && (r.code != 4 || pending.NewUUID != "") {
				t.Fatalf("fsck exit %d\n%s", r.code, r.stdout)
			}
			must(t, run(t, dir, "ddfs", "mkdir", "b.img:/e"), 0)
			must(t, run(t, dir, "fsck.ddfs", "b.img"), 0)
			if pending.NewUUID != "" {
				r = must(t, run(t, dir, "ddfs", "set-uuid", "a.img"), 0)
				if strings.TrimSpace(r.stdout) != u {
					t.Fatalf("finishing printed %q", r.stdout)
				}
			}
			if in := getInfo(t, dir, "b.img"); in.UUID != u {
				t.Fatalf("uuid %s", in.UUID)
			}
			must(t, run(t, dir, "fsck.ddfs", "b.img"), 0)
			if got := must(t, run(t, dir, "ddfs", "ls", "a.img:/"), 0).stdout; got != "d\ne\n" {
				t.Fatalf("ls %q", got)
			}
		})
	}
}

// TestCopiedDeviceElsewhereRefused: one device of a set whose members live
// in different folders (so path hints are stored) copied to a third folder.
// Its hints lead to the original's other device; the copy's own hint names
// the original it was copied from, so the copy is refused and the original
// set is not written (found by review: mkdir wrote into d2/b.img).
func TestCopiedDeviceElsewhereRefused(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"d1", "d2", "d3"} {
		os.Mkdir(filepath.Join(dir, d), 0o755)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "64M", "-d", "raid1", "-m", "raid1", "d1/a.img", "d2/b.img"), 0)
	copyFile(t, filepath.Join(dir, "d1/a.img"), filepath.Join(dir, "d3/a.img"))
	sumA, sumB := digest(t, filepath.Join(dir, "d1/a.img")), digest(t, filepath.Join(dir, "d2/b.img"))
	r := must(t, run(t, dir, "ddfs", "mkdir", "d3/a.img:/fromcopy"), 1)
	if !names(r, "d3/a.img", "d1/a.img", "device 1") {
		t.Fatalf("stderr %q", r.stderr)
	}
	if digest(t, filepath.Join(dir, "d1/a.img")) != sumA || digest(t, filepath.Join(dir, "d2/b.img")) != sumB {
		t.Fatal("the original set was written")
	}
	// The original opens as before, and naming a file twice is no conflict.
	must(t, run(t, dir, "ddfs", "mkdir", "d1/a.img:/x"), 0)
	must(t, run(t, dir, "ddfs", "ls", "--device", "d1/a.img", "d1/a.img:/"), 0)
	must(t, run(t, dir, "fsck.ddfs", "d1/a.img"), 0)
}
