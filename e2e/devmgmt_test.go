package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fillDevTest puts the sample tree and a few MiB of random data into image.
func fillDevTest(t *testing.T, dir, image string) {
	t.Helper()
	sampleTree(t, dir)
	b := make([]byte, 6<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(filepath.Join(dir, "src/random.bin"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "ddfs", "cp", "-r", "src", image+":/"), 0)
}

// sameFiles copies /src out of image and compares every file and link
// with the host tree it came from; then fsck must find the set clean.
func sameFiles(t *testing.T, dir, image string) {
	t.Helper()
	sameCopy(t, dir, image)
	must(t, run(t, dir, "fsck.ddfs", "--check-data", image), 0)
}

// sameCopy is sameFiles without fsck; flags go to cp (--degraded).
func sameCopy(t *testing.T, dir, image string, flags ...string) {
	t.Helper()
	out := filepath.Join(dir, "out")
	os.RemoveAll(out)
	must(t, run(t, dir, "ddfs", append(append([]string{"cp", "-a"}, flags...), image+":/src", "out")...), 0)
	n := 0
	err := filepath.Walk(filepath.Join(dir, "src"), func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(dir, "src"), p)
		q := filepath.Join(out, rel)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			a, _ := os.Readlink(p)
			if b, err := os.Readlink(q); err != nil || a != b {
				t.Errorf("%s: link %q, copy %q (%v)", rel, a, b, err)
			}
		case fi.Mode().IsRegular():
			a, _ := os.ReadFile(p)
			if b, err := os.ReadFile(q); err != nil || !bytes.Equal(a, b) {
				t.Errorf("%s: contents differ (%v)", rel, err)
			}
			n++
		}
		return nil
	})
	if err != nil || n < 4 {
		t.Fatalf("compared %d files: %v", n, err)
	}
}

// TestDeviceRemove removes a device of each layout by its path: the files
// read back identical, fsck is clean, the set lists one device less and
// the removed file is no longer a ddfs device.
func TestDeviceRemove(t *testing.T) {
	for _, tc := range []struct {
		name string
		mkfs []string
	}{
		{"raid1", []string{"-d", "raid1", "-m", "raid1", "a.img", "b.img", "c.img"}},
		{"single", []string{"-b", "512M", "-d", "single", "-m", "raid1c3", "a.img", "b.img", "c.img", "d.img"}},
		{"raid10", []string{"-d", "raid10", "-m", "raid10", "a.img", "b.img", "c.img", "d.img", "e.img"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, run(t, dir, "mkfs.ddfs", append([]string{"-q", "-b", "256M"}, tc.mkfs...)...), 0)
			fillDevTest(t, dir, "a.img")
			before := getInfo(t, dir, "a.img")
			must(t, run(t, dir, "ddfs", "device", "remove", "a.img", "b.img"), 0)
			after := getInfo(t, dir, "a.img")
			if len(after.Devices) != len(before.Devices)-1 {
				t.Fatalf("%d devices after remove, want %d", len(after.Devices), len(before.Devices)-1)
			}
			for _, c := range after.Chunks {
				for _, s := range c.Stripes {
					if s.DevID == 2 {
						t.Fatalf("chunk %d still on device 2", c.Logical)
					}
				}
			}
			must(t, run(t, dir, "ddfs", "info", "b.img"), 1)
			sameFiles(t, dir, "a.img")
		})
	}
}

// TestDeviceRemoveRefused: raid1 on two devices cannot lose one, and a
// device cannot go when the others lack room; nothing is committed.
func TestDeviceRemoveRefused(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-d", "raid1", "-m", "raid1", "a.img", "b.img"), 0)
	fillDevTest(t, dir, "a.img")
	gen := getInfo(t, dir, "a.img").Generation
	must(t, run(t, dir, "ddfs", "device", "remove", "a.img", "2"), 1)
	must(t, run(t, dir, "ddfs", "device", "remove", "a.img", "9"), 1)
	if in := getInfo(t, dir, "a.img"); in.Generation != gen || len(in.Devices) != 2 {
		t.Fatalf("refused remove changed the set: generation %d -> %d, %d devices", gen, in.Generation, len(in.Devices))
	}
	sameFiles(t, dir, "a.img")

	must(t, run(t, dir, "mkfs.ddfs", "-q", "-f", "-b", "256M", "-d", "single", "-m", "dup", "x.img"), 0)
	fillDevTest(t, dir, "x.img")
	must(t, run(t, dir, "ddfs", "device", "add", "-b", "64M", "x.img", "y.img"), 0)
	gen = getInfo(t, dir, "x.img").Generation
	must(t, run(t, dir, "ddfs", "device", "remove", "x.img", "1"), 1)
	if getInfo(t, dir, "x.img").Generation != gen {
		t.Fatal("refused remove committed")
	}
	sameFiles(t, dir, "x.img")
}

// TestDeviceReplaceResizeBalance: one device grows a second, balance
// converts single/dup to raid1, the second is replaced, devices are grown
// and shrunk; after each step the files are identical and fsck is clean.
func TestDeviceReplaceResizeBalance(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "a.img"), 0)
	fillDevTest(t, dir, "a.img")
	must(t, run(t, dir, "ddfs", "device", "add", "-b", "256M", "a.img", "b.img"), 0)
	must(t, run(t, dir, "ddfs", "balance", "-d", "raid1", "-m", "raid1", "a.img"), 0)
	for _, c := range getInfo(t, dir, "a.img").Chunks {
		if c.Profile != "raid1" || len(c.Stripes) != 2 {
			t.Fatalf("chunk %d: %s with %d stripes after balance", c.Logical, c.Profile, len(c.Stripes))
		}
	}
	sameFiles(t, dir, "a.img")

	must(t, run(t, dir, "ddfs", "device", "replace", "a.img", "b.img", "c.img:rotational=1"), 0)
	in := getInfo(t, dir, "c.img")
	if len(in.Devices) != 2 || in.Devices[1].DevID != 3 || !in.Devices[1].Rotational {
		t.Fatalf("devices after replace: %+v", in.Devices)
	}
	must(t, run(t, dir, "ddfs", "info", "b.img"), 1)
	sameFiles(t, dir, "a.img")

	must(t, run(t, dir, "ddfs", "device", "resize", "a.img", "1", "400M"), 0)
	if st, _ := os.Stat(filepath.Join(dir, "a.img")); st.Size() != 400<<20 {
		t.Fatalf("a.img is %d bytes after growing to 400M", st.Size())
	}
	must(t, run(t, dir, "ddfs", "device", "resize", "a.img", "3", "200M"), 0)
	in = getInfo(t, dir, "a.img")
	if in.Devices[0].Size != 400<<20 || in.Devices[1].Size != 200<<20 {
		t.Fatalf("sizes after resize: %+v", in.Devices)
	}
	if st, _ := os.Stat(filepath.Join(dir, "c.img")); st.Size() != 200<<20 {
		t.Fatalf("c.img is %d bytes after shrinking to 200M", st.Size())
	}
	sameFiles(t, dir, "a.img")
	if r := must(t, run(t, dir, "ddfs", "balance", "a.img"), 0); !strings.HasPrefix(r.stdout, "restored 0 chunks") {
		t.Fatalf("bare balance on a whole set: %q", r.stdout)
	}
	must(t, run(t, dir, "ddfs", "balance", "-d", "raid1c3", "a.img"), 1)
}

// TestDeviceReplaceBadDevice: the device being replaced holds garbage
// where its stripes are; replace reads around it from the mirror, so the
// new device holds good copies: fsck --check-data (every copy) is clean.
func TestDeviceReplaceBadDevice(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-d", "raid1", "-m", "raid1", "a.img", "b.img"), 0)
	fillDevTest(t, dir, "a.img")
	f, err := os.OpenFile(filepath.Join(dir, "b.img"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := bytes.Repeat([]byte{0x5a}, 8<<20)
	for _, c := range getInfo(t, dir, "a.img").Chunks {
		for _, s := range c.Stripes {
			if s.DevID == 2 {
				if _, err := f.WriteAt(junk[:min(len(junk), int(c.Length))], int64(s.Offset)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	f.Close()
	must(t, run(t, dir, "fsck.ddfs", "--check-data", "a.img"), 4)
	must(t, run(t, dir, "ddfs", "device", "replace", "a.img", "b.img", "c.img"), 0)
	sameFiles(t, dir, "a.img")
}

// TestKill9DuringDeviceRemove kills `ddfs device remove` at growing delays
// and runs it again until it finishes: after every kill the set opens with
// the device a member or gone, checks clean and holds the same files.
func TestKill9DuringDeviceRemove(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "512M", "-d", "raid1", "-m", "raid1", "a.img", "b.img", "c.img"), 0)
	fillDevTest(t, dir, "a.img")
	gen0 := getInfo(t, dir, "a.img").Generation
	// The last run goes unkilled: on a loaded machine the whole removal
	// can take longer than any delay (it used to fail after 12 kills).
	const lastKill = 10
	delay, kills, midway := 2*time.Millisecond, 0, 0
	for attempt := 0; ; attempt++ {
		cmd := exec.Command(filepath.Join(binDir, "ddfs"), "device", "remove", "a.img", "b.img")
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		kill := time.After(delay)
		if attempt > lastKill {
			kill = nil
		}
		select {
		case err = <-done:
		case <-kill:
			cmd.Process.Signal(syscall.SIGKILL)
			err = <-done
			kills++
		}
		in := getInfo(t, dir, "a.img")
		if n := len(in.Devices); n != 2 && n != 3 {
			t.Fatalf("%d devices after a kill", n)
		}
		if len(in.Devices) == 3 && in.Generation > gen0 {
			midway++ // killed after some chunks moved
		}
		sameFiles(t, dir, "a.img")
		if len(in.Devices) == 2 {
			break // done, whether or not the kill came after the last commit
		}
		if err == nil || attempt > lastKill {
			t.Fatalf("device remove exited with %v and the device still a member", err)
		}
		delay *= 2
	}
	t.Logf("%d kills, %d left the device a member with chunks moved", kills, midway)
	// A kill between the last commit and the wipe leaves b.img with its
	// old superblocks: the next writer wipes it.
	must(t, run(t, dir, "ddfs", "mkdir", "a.img:/after"), 0)
	must(t, run(t, dir, "ddfs", "info", "b.img"), 1)
}

// TestRemovedDeviceWithSuperblocks: a removed device that still carries
// its old superblocks (a crash between the commit that dropped it and the
// wipe) is ignored by readers, which leave it as it is (fsck warns), and
// wiped by the next writer.
func TestRemovedDeviceWithSuperblocks(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-d", "raid1", "-m", "raid1", "a.img", "b.img", "c.img"), 0)
	fillDevTest(t, dir, "a.img")
	old, err := os.ReadFile(filepath.Join(dir, "b.img"))
	if err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "ddfs", "device", "remove", "a.img", "2"), 0)
	if err := os.WriteFile(filepath.Join(dir, "b.img"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, img := range []string{"a.img", "b.img"} {
		if in := getInfo(t, dir, img); len(in.Devices) != 2 {
			t.Fatalf("opened through %s: %d devices", img, len(in.Devices))
		}
	}
	must(t, run(t, dir, "fsck.ddfs", "b.img"), 0)
	sameFiles(t, dir, "a.img")
	if now, _ := os.ReadFile(filepath.Join(dir, "b.img")); !bytes.Equal(now, old) {
		t.Fatal("a reader changed the removed device")
	}
	must(t, run(t, dir, "ddfs", "mkdir", "a.img:/after"), 0)
	must(t, run(t, dir, "ddfs", "info", "b.img"), 1)
	must(t, run(t, dir, "fsck.ddfs", "a.img"), 0)
}

// TestDegradedReplacePerProfile: fill, delete one device file, write
// degraded (chunks below the set's profile), replace the device with
// --degraded (every chunk read from its surviving copies): the set is
// whole again, the degraded chunks keep their profile and fallback mark
// (as btrfs; replace says to balance), and `balance` at the set's profiles
// converts them and clears the mark (review: df kept listing them); fsck
// (without --degraded) is clean, the files are identical.
func TestDegradedReplacePerProfile(t *testing.T) {
	for _, tc := range mirroredSets {
		t.Run(tc.profile, func(t *testing.T) {
			dir := t.TempDir()
			// 256 MiB devices for raid10 too: its chunks take a tenth of
			// the set in all, spread over the data stripes (with stripes
			// of a tenth each, too little was left to convert back).
			lostLast(t, dir, "256M", tc.profile, tc.devs, func() { fillDevTest(t, dir, "d0.img") })
			must(t, run(t, dir, "ddfs", "mkdir", "--degraded", "d0.img:/src/written-degraded"), 0)
			below := dfFallbacks(t, dir, "--degraded", "d0.img")
			if len(below) == 0 {
				t.Fatal("no fallback chunks after a degraded write")
			}
			must(t, run(t, dir, "ddfs", "device", "replace", "d0.img", fmt.Sprint(tc.devs), "new.img"), 1)
			r := must(t, run(t, dir, "ddfs", "device", "replace", "--degraded", "d0.img", fmt.Sprint(tc.devs), "new.img"), 0)
			if hint := fmt.Sprintf("ddfs balance -d %s -m %s d0.img", tc.profile, tc.profile); !strings.Contains(r.stdout, hint) {
				t.Fatalf("replace: %q does not say %q", r.stdout, hint)
			}
			if in := getInfo(t, dir, "new.img"); len(in.Devices) != tc.devs {
				t.Fatalf("%d devices after replace, want %d", len(in.Devices), tc.devs)
			}
			if got := dfFallbacks(t, dir, "d0.img"); !reflect.DeepEqual(got, below) {
				t.Fatalf("fallbacks after replace %v, want them kept: %v", got, below)
			}
			must(t, run(t, dir, "ddfs", "balance", "-d", tc.profile, "-m", tc.profile, "d0.img"), 0)
			if got := dfFallbacks(t, dir, "d0.img"); len(got) != 0 {
				t.Fatalf("fallbacks after balance: %v", got)
			}
			if out := must(t, run(t, dir, "ddfs", "df", "d0.img"), 0).stdout; strings.Contains(out, "Fallback") || strings.Count(out, " "+tc.profile+" ") != 3 {
				t.Fatalf("df after balance lists chunks below %s:\n%s", tc.profile, out)
			}
			must(t, run(t, dir, "ddfs", "stat", "d0.img:/src/written-degraded"), 0)
			sameFiles(t, dir, "d0.img")
		})
	}
}

// dfFallbacks is the "fallbacks" list of df --json (args: flags, IMAGE),
// as "type/profile@logical".
func dfFallbacks(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	var df struct {
		Fallbacks []struct {
			Logical uint64 `json:"logical"`
			Type    string `json:"type"`
			Profile string `json:"profile"`
		} `json:"fallbacks"`
	}
	r := must(t, run(t, dir, "ddfs", append([]string{"df", "--json"}, args...)...), 0)
	if err := json.Unmarshal([]byte(r.stdout), &df); err != nil {
		t.Fatalf("df --json: %v\n%s", err, r.stdout)
	}
	out := []string{}
	for _, fb := range df.Fallbacks {
		out = append(out, fmt.Sprintf("%s/%s@%d", fb.Type, fb.Profile, fb.Logical))
	}
	return out
}

// TestDeviceReplaceRerun: a replace that fails part-way (DDFS_FAULT: EIO
// on the new device after N writes), before or after the new device has
// joined the set, is finished by running it again: the old device goes,
// the set checks clean and the files read back identical.
func TestDeviceReplaceRerun(t *testing.T) {
	base := t.TempDir()
	files := randomTree(t, base, 11)
	must(t, run(t, base, "mkfs.ddfs", "-q", "-b", "256M", "-m", "raid1", "-d", "raid1", "a.img", "b.img"), 0)
	must(t, run(t, base, "ddfs", "cp", "-r", "src", "a.img:/"), 0)
	joined := 0
	for _, n := range []string{"1", "5", "12"} {
		t.Run(n, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{"a.img", "b.img"} {
				copyFile(t, filepath.Join(base, f), filepath.Join(dir, f))
			}
			must(t, runEnv(t, dir, []string{"DDFS_FAULT=write-eio:" + n + ":c.img"}, "ddfs", "device", "replace", "a.img", "b.img", "c.img"), 1)
			if len(getInfo(t, dir, "a.img").Devices) == 3 {
				joined++
			}
			must(t, run(t, dir, "ddfs", "device", "replace", "a.img", "b.img", "c.img"), 0)
			in := getInfo(t, dir, "a.img")
			var ids []uint64
			for _, d := range in.Devices {
				ids = append(ids, d.DevID)
			}
			if len(ids) != 2 || ids[0] != 1 || ids[1] != 3 {
				t.Fatalf("devices %v after the rerun, want [1 3]", ids)
			}
			must(t, run(t, dir, "fsck.ddfs", "a.img"), 0)
			for name, want := range files {
				if got := must(t, run(t, dir, "ddfs", "cat", "a.img:/"+name), 0).stdout; got != string(want) {
					t.Fatalf("%s differs after the rerun", name)
				}
			}
		})
	}
	if joined == 0 {
		t.Fatal("no fault hit after the new device joined: the rerun's finishing path is untested")
	}
}

// TestBalanceLowerNeedsForce: as btrfs, balance refuses without -f a
// metadata profile that survives fewer lost devices than the metadata
// has (raid1 -> raid0, single, dup), changing nothing; with -f it
// converts.
func TestBalanceLowerNeedsForce(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-m", "raid1", "-d", "raid1", "a.img", "b.img"), 0)
	metaProfiles := func() map[string]bool {
		out := map[string]bool{}
		for _, c := range getInfo(t, dir, "a.img").Chunks {
			if c.Type != "data" {
				out[c.Profile] = true
			}
		}
		return out
	}
	for _, p := range []string{"raid0", "single", "dup"} {
		if r := must(t, run(t, dir, "ddfs", "balance", "-m", p, "a.img"), 1); !strings.Contains(r.stderr, " -f ") {
			t.Fatalf("-m %s: %q", p, r.stderr)
		}
		if got := metaProfiles(); !reflect.DeepEqual(got, map[string]bool{"raid1": true}) {
			t.Fatalf("refused -m %s changed the metadata: %v", p, got)
		}
	}
	must(t, run(t, dir, "ddfs", "balance", "-m", "raid1", "-d", "single", "a.img"), 0)
	must(t, run(t, dir, "ddfs", "balance", "-f", "-m", "dup", "a.img"), 0)
	if got := metaProfiles(); !reflect.DeepEqual(got, map[string]bool{"dup": true}) {
		t.Fatalf("-f -m dup: metadata %v", got)
	}
	must(t, run(t, dir, "fsck.ddfs", "a.img"), 0)
}

// TestDeviceReplaceRefusedCleansUp: a replace refused before the new
// device joins (too small for what the old one holds) removes the image
// file it created, and leaves a file the user had alone.
func TestDeviceReplaceRefusedCleansUp(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-m", "raid1", "-d", "raid1", "a.img", "b.img"), 0)
	must(t, run(t, dir, "ddfs", "device", "replace", "-b", "50M", "a.img", "b.img", "c.img"), 1)
	if _, err := os.Stat(filepath.Join(dir, "c.img")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("refused replace left c.img: %v", err)
	}
	mine := filepath.Join(dir, "mine.img")
	if err := os.WriteFile(mine, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(mine, 50<<20); err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "ddfs", "device", "replace", "-b", "50M", "a.img", "b.img", "mine.img"), 1)
	if st, err := os.Stat(mine); err != nil || st.Size() != 50<<20 {
		t.Fatalf("the user's file after a refused replace: %v", err)
	}
	must(t, run(t, dir, "fsck.ddfs", "a.img"), 0)
}
