package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// placedFile writes a 4 MiB random file into a fresh set of the given
// profile and finds where its copies lie: the device image and byte
// offset of each copy (non-striped profiles), by searching the data
// chunk's stripes for its bytes.
func placedFile(t *testing.T, dir, profile string, imgs ...string) ([]byte, []string, []int64) {
	t.Helper()
	must(t, run(t, dir, "mkfs.ddfs", append([]string{"-q", "-b", "512M", "-d", profile, "-m", profile}, imgs...)...), 0)
	r := rand.New(rand.NewPCG(7, 7))
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "ddfs", "cp", "big", imgs[0]+":/big"), 0)
	in := getInfo(t, dir, imgs[0])
	paths := map[uint64]string{}
	for _, d := range in.Devices {
		paths[d.DevID] = d.Path
	}
	var files []string
	var offs []int64
	for _, c := range in.Chunks {
		if c.Type != "data" {
			continue
		}
		for _, s := range c.Stripes {
			img, err := os.ReadFile(filepath.Join(dir, paths[s.DevID]))
			if err != nil {
				t.Fatal(err)
			}
			stripe := img[s.Offset:min(uint64(len(img)), s.Offset+c.Length)]
			at := bytes.Index(stripe, data[:4096])
			if at < 0 || at%4096 != 0 || !bytes.Equal(stripe[at:at+len(data)], data) {
				continue
			}
			files, offs = append(files, paths[s.DevID]), append(offs, int64(s.Offset)+int64(at))
		}
	}
	if len(files) != 2 {
		t.Fatalf("found %d contiguous copies of the file, want 2", len(files))
	}
	return data, files, offs
}

func smash(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("not the data that was written here"), off+100); err != nil {
		t.Fatal(err)
	}
}

func copyAt(t *testing.T, path string, off int64, n int) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	return b
}

type scrubJSON struct {
	Devices []struct {
		DevID               uint64 `json:"devid"`
		BytesRead           uint64 `json:"bytes_read"`
		ErrorsFound         uint64 `json:"errors_found"`
		CsumErrors          uint64 `json:"csum_errors"`
		ErrorsCorrected     uint64 `json:"errors_corrected"`
		ErrorsUncorrectable uint64 `json:"errors_uncorrectable"`
	} `json:"devices"`
	Files []struct {
		Path string `json:"path"`
	} `json:"files"`
}

func scrubRun(t *testing.T, dir string, code int, args ...string) (found, corrected, unc uint64, files []string) {
	t.Helper()
	r := must(t, run(t, dir, "ddfs", append([]string{"scrub", "--json"}, args...)...), code)
	var rep scrubJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("scrub --json: %v\n%s", err, r.stdout)
	}
	for _, d := range rep.Devices {
		found, corrected, unc = found+d.ErrorsFound, corrected+d.ErrorsCorrected, unc+d.ErrorsUncorrectable
		if d.BytesRead == 0 {
			t.Fatalf("device %d: nothing read", d.DevID)
		}
	}
	for _, f := range rep.Files {
		files = append(files, f.Path)
	}
	return found, corrected, unc, files
}

// Damaged sectors on both copies (never both copies of one sector):
// scrub reports them and the file, --repair rewrites them (the bytes on
// disk are the file's again), a second scrub finds nothing.
func TestScrubRepairE2E(t *testing.T) {
	for _, tc := range []struct {
		profile string
		imgs    []string
	}{{"raid1", []string{"a.img", "b.img"}}, {"dup", []string{"a.img"}}} {
		t.Run(tc.profile, func(t *testing.T) {
			dir := t.TempDir()
			data, files, offs := placedFile(t, dir, tc.profile, tc.imgs...)
			r := rand.New(rand.NewPCG(3, 3))
			sectors := r.Perm(len(data) / 4096)[:20]
			for i, s := range sectors {
				smash(t, filepath.Join(dir, files[i%2]), offs[i%2]+int64(s)*4096)
			}
			found, corrected, _, hit := scrubRun(t, dir, 4, tc.imgs[0])
			if found != 20 || corrected != 0 || strings.Join(hit, ",") != "/big" {
				t.Fatalf("scrub: %d found, %d corrected, files %v", found, corrected, hit)
			}
			found, corrected, unc, _ := scrubRun(t, dir, 1, "--repair", tc.imgs[0])
			if found != 20 || corrected != 20 || unc != 0 {
				t.Fatalf("scrub --repair: %d found, %d corrected, %d uncorrectable", found, corrected, unc)
			}
			for m := range files {
				if !bytes.Equal(copyAt(t, filepath.Join(dir, files[m]), offs[m], len(data)), data) {
					t.Fatalf("copy %d not repaired on disk", m+1)
				}
			}
			if found, _, _, _ := scrubRun(t, dir, 0, tc.imgs[0]); found != 0 {
				t.Fatalf("second scrub found %d", found)
			}
			must(t, run(t, dir, "fsck.ddfs", "--check-data", tc.imgs[0]), 0)
		})
	}
}

// A read meeting a bad copy returns good data; a read-only command (cat)
// reports it on stderr and leaves it, a writer (cp inside the image)
// rewrites it and counts it in --stats.
func TestSelfHealingRead(t *testing.T) {
	dir := t.TempDir()
	data, files, offs := placedFile(t, dir, "raid1", "a.img", "b.img")
	bad := offs[0] + 5*4096
	smash(t, filepath.Join(dir, files[0]), offs[0]+5*4096)
	damaged := copyAt(t, filepath.Join(dir, files[0]), bad, 4096)
	r := must(t, run(t, dir, "ddfs", "cat", "a.img:/big"), 0)
	if r.stdout != string(data) || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "ddfs: cat: a.img: ") {
		t.Fatalf("cat: data equal %v, stderr %q", r.stdout == string(data), r.stderr)
	}
	if !bytes.Equal(copyAt(t, filepath.Join(dir, files[0]), bad, 4096), damaged) {
		t.Fatal("a read-only cat changed the bad copy")
	}
	// --reflink=never: a reflink copy (the default inside one image) reads no data.
	r = must(t, run(t, dir, "ddfs", "cp", "--reflink=never", "--stats=json", "a.img:/big", "a.img:/big2"), 0)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	var stats struct {
		Heal struct{ Found, Repaired int } `json:"heal"`
	}
	if len(lines) != 2 || json.Unmarshal([]byte(lines[1]), &stats) != nil || stats.Heal.Found != 1 || stats.Heal.Repaired != 1 {
		t.Fatalf("cp: stderr %q", r.stderr)
	}
	if !bytes.Equal(copyAt(t, filepath.Join(dir, files[0]), offs[0], len(data)), data) {
		t.Fatal("the writer's read did not rewrite the bad copy")
	}
	must(t, run(t, dir, "fsck.ddfs", "--check-data", "a.img"), 0)
}

// TestScrubDegradedLost: raid0 data with a member gone. What lay on it
// has no copy left: scrub --degraded counts it uncorrectable on the
// missing device, lists exactly the files that no longer read, exit 4;
// fsck --degraded reports DATA_LOST in exactly those files.
func TestScrubDegradedLost(t *testing.T) {
	dir := t.TempDir()
	// Small files lie in one stripe each, many to a scrub unit: those on
	// the present device still read.
	files := randomTree(t, dir, 5)
	r := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < 40; i++ {
		name := fmt.Sprintf("src/small/%02d", i)
		files[name] = make([]byte, 12<<10)
		for j := range files[name] {
			files[name][j] = byte(r.Uint32())
		}
		os.MkdirAll(filepath.Join(dir, "src/small"), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-m", "raid1", "-d", "raid0", "a.img", "b.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-r", "src", "a.img:/"), 0)
	must(t, run(t, dir, "ddfs", "scrub", "a.img"), 0)
	if err := os.Rename(filepath.Join(dir, "b.img"), filepath.Join(t.TempDir(), "b.img")); err != nil {
		t.Fatal(err)
	}
	var unreadable []string
	for name := range files {
		if run(t, dir, "ddfs", "cat", "--degraded", "a.img:/"+name).code != 0 {
			unreadable = append(unreadable, "/"+name)
		}
	}
	if len(unreadable) == 0 || len(unreadable) == len(files) {
		t.Fatalf("%d of %d files unreadable: the test needs some of each", len(unreadable), len(files))
	}
	out := must(t, run(t, dir, "ddfs", "scrub", "--degraded", "--json", "a.img"), 4)
	var rep struct {
		Devices []struct {
			DevID               uint64 `json:"devid"`
			Missing             bool   `json:"missing"`
			ErrorsUncorrectable uint64 `json:"errors_uncorrectable"`
		} `json:"devices"`
		Files []struct {
			Path          string `json:"path"`
			Uncorrectable bool   `json:"uncorrectable"`
		} `json:"files"`
		DataBytes uint64 `json:"data_bytes"`
		Errors    []struct {
			Len   uint64 `json:"length"`
			DevID uint64 `json:"devid"`
			Kind  string `json:"kind"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Devices) != 2 || !rep.Devices[1].Missing || rep.Devices[1].ErrorsUncorrectable == 0 || rep.Devices[0].ErrorsUncorrectable != 0 {
		t.Fatalf("devices %+v", rep.Devices)
	}
	// What the present device holds is checked, not given up with the
	// stripes beside it: about half the data is lost, not all of it.
	lost := uint64(0)
	for _, e := range rep.Errors {
		if e.Kind != "missing" || e.DevID != 2 {
			t.Fatalf("error %+v", e)
		}
		lost += e.Len
	}
	if lost == 0 || lost*10 > rep.DataBytes*7 {
		t.Fatalf("%d of %d data bytes lost", lost, rep.DataBytes)
	}
	var listed []string
	for _, f := range rep.Files {
		if !f.Uncorrectable {
			t.Fatalf("%s listed as correctable", f.Path)
		}
		listed = append(listed, f.Path)
	}
	slices.Sort(listed)
	slices.Sort(unreadable)
	if !slices.Equal(listed, unreadable) {
		t.Fatalf("scrub lists %v, unreadable are %v", listed, unreadable)
	}
	// fsck --degraded finds the same without reading the data.
	listed = nil
	for _, p := range fsckJSON(t, dir, 4, "--degraded", "a.img").Problems {
		switch p.Code {
		case "DATA_LOST":
			listed = append(listed, p.Path)
		case "DEV_MISSING":
		default:
			t.Fatalf("fsck --degraded: %+v", p)
		}
	}
	slices.Sort(listed)
	if !slices.Equal(listed, unreadable) {
		t.Fatalf("fsck --degraded: DATA_LOST in %v, unreadable are %v", listed, unreadable)
	}
}

// TestScrubRepairFails: scrub --repair whose rewrites all fail (EIO on
// the device with the bad copies) leaves the file unrepaired, says so
// (files[].repaired false) and exits 4; a rerun that can write repairs it
// (exit 1: corrected).
func TestScrubRepairFails(t *testing.T) {
	dir := t.TempDir()
	_, files, offs := placedFile(t, dir, "raid1", "a.img", "b.img")
	smash(t, filepath.Join(dir, files[1]), offs[1]+4096)
	repaired := func(r result) []bool {
		t.Helper()
		var rep struct {
			Files []struct {
				Path     string `json:"path"`
				Repaired bool   `json:"repaired"`
			} `json:"files"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatal(err)
		}
		var out []bool
		for _, f := range rep.Files {
			if f.Path != "/big" {
				t.Fatalf("files %+v", rep.Files)
			}
			out = append(out, f.Repaired)
		}
		return out
	}
	r := must(t, runEnv(t, dir, []string{"DDFS_FAULT=write-eio:0:" + files[1]}, "ddfs", "scrub", "--repair", "--json", "a.img"), 4)
	if got := repaired(r); !slices.Equal(got, []bool{false}) {
		t.Fatalf("failed rewrite: repaired %v", got)
	}
	if got := repaired(must(t, run(t, dir, "ddfs", "scrub", "--repair", "--json", "a.img"), 1)); !slices.Equal(got, []bool{true}) {
		t.Fatalf("rewrite: repaired %v", got)
	}
	must(t, run(t, dir, "ddfs", "scrub", "a.img"), 0)
}
