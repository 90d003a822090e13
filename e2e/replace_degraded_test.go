package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDegradedReplaceInTurn is issue 36 through the command line: raid1c3
// on three images with two deleted, raid10 on four with one deleted;
// `ddfs device replace --degraded d0.img ID newID.img` for each in turn.
// Between replaces the files read back (degraded) and the output names
// the member still missing; after the last the set opens whole, no chunk
// has a stripe off its members, fsck -n and --check-data are clean, the
// files are identical, and they still are with any one member lost (with
// any two for raid1c3, after the balance the replace hints at).
func TestDegradedReplaceInTurn(t *testing.T) {
	for _, tc := range []struct {
		profile string
		devs    int
		gone    []int // devids; d(ID-1).img
	}{{"raid1c3", 3, []int{2, 3}}, {"raid10", 4, []int{2}}} {
		t.Run(tc.profile, func(t *testing.T) {
			dir := t.TempDir()
			imgs := mkfsProfile(t, dir, "256M", tc.profile, tc.devs)
			fillDevTest(t, dir, "d0.img")
			for _, id := range tc.gone {
				if err := os.Remove(filepath.Join(dir, imgs[id-1])); err != nil {
					t.Fatal(err)
				}
			}
			for i, id := range tc.gone {
				r := must(t, run(t, dir, "ddfs", "device", "replace", "--degraded", "d0.img", fmt.Sprint(id), fmt.Sprintf("new%d.img", id)), 0)
				if left := tc.gone[i+1:]; len(left) > 0 {
					if want := fmt.Sprintf("device %d is still missing", left[0]); !strings.Contains(r.stdout, want) || strings.Contains(r.stdout, "balance") {
						t.Fatalf("replace %d: %q does not say %q alone", id, r.stdout, want)
					}
					sameCopy(t, dir, "d0.img", "--degraded")
				}
			}
			members := wholeSet(t, dir, tc.devs)
			if tc.profile == "raid1c3" {
				// The replace of device 2 wrote raid1 with two present.
				restoreBelowProfile(t, dir, "d0.img")
			}
			must(t, run(t, dir, "fsck.ddfs", "-n", "d0.img"), 0)
			sameFiles(t, dir, "d0.img")
			loseEach(t, dir, members, 1)
			if tc.profile == "raid1c3" {
				loseEach(t, dir, members, 2)
			}
		})
	}
}

// wholeSet checks that the set opens without --degraded with n members
// and that every chunk lies on them at full width; it returns the
// members' image names.
func wholeSet(t *testing.T, dir string, n int) []string {
	t.Helper()
	in := getInfo(t, dir, "d0.img")
	ids := map[uint64]bool{}
	var names []string
	for _, d := range in.Devices {
		ids[d.DevID] = true
		names = append(names, filepath.Base(d.Path))
	}
	if len(names) != n {
		t.Fatalf("%d members after the replaces, want %d: %v", len(names), n, names)
	}
	for _, c := range in.Chunks {
		for _, s := range c.Stripes {
			if !ids[s.DevID] {
				t.Fatalf("%s chunk %d has a stripe on device %d, no member", c.Type, c.Logical, s.DevID)
			}
		}
	}
	return names
}

// loseEach moves each k-subset (k 1 or 2) of the members out of the
// folder in turn and copies the files out of a survivor, degraded.
func loseEach(t *testing.T, dir string, members []string, k int) {
	t.Helper()
	away := t.TempDir()
	move := func(names []string, from, to string) {
		for _, m := range names {
			if err := os.Rename(filepath.Join(from, m), filepath.Join(to, m)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, lost := range subsets(members, k) {
		move(lost, dir, away)
		left := slices.DeleteFunc(slices.Clone(members), func(m string) bool { return slices.Contains(lost, m) })
		sameCopy(t, dir, left[0], "--degraded")
		move(lost, away, dir)
	}
}

// subsets lists the subsets of one or two (k) of names.
func subsets(names []string, k int) [][]string {
	var out [][]string
	for i := range names {
		if k == 1 {
			out = append(out, names[i:i+1])
		}
		for j := i + 1; k == 2 && j < len(names); j++ {
			out = append(out, []string{names[i], names[j]})
		}
	}
	return out
}

// TestDegradedReplaceRerun: on raid1c3 minus two, a replace of device 2
// that fails part-way (EIO on the new image after N writes) is finished
// by running it again, device 3's copies still kept missing; replacing
// device 3 then makes the set whole and the files identical.
func TestDegradedReplaceRerun(t *testing.T) {
	base := t.TempDir()
	imgs := mkfsProfile(t, base, "256M", "raid1c3", 3)
	fillDevTest(t, base, "d0.img")
	joined := 0
	for _, n := range []string{"1", "4", "8", "12"} {
		t.Run(n, func(t *testing.T) {
			dir := t.TempDir()
			copyFile(t, filepath.Join(base, imgs[0]), filepath.Join(dir, imgs[0]))
			runCmd(t, exec.Command("cp", "-r", filepath.Join(base, "src"), dir))
			replace := []string{"device", "replace", "--degraded", "d0.img", "2", "new2.img"}
			must(t, runEnv(t, dir, []string{"DDFS_FAULT=write-eio:" + n + ":new2.img"}, "ddfs", replace...), 1)
			var in info
			r := must(t, run(t, dir, "ddfs", "info", "--json", "--degraded", "d0.img"), 0)
			if err := json.Unmarshal([]byte(r.stdout), &in); err != nil {
				t.Fatal(err)
			}
			if len(in.Devices) == 4 {
				joined++
				t.Logf("EIO after %s writes: new2.img had joined", n)
			}
			must(t, run(t, dir, "ddfs", replace...), 0)
			must(t, run(t, dir, "ddfs", "device", "replace", "--degraded", "d0.img", "3", "new3.img"), 0)
			wholeSet(t, dir, 3)
			restoreBelowProfile(t, dir, "d0.img")
			sameFiles(t, dir, "d0.img")
		})
	}
	if joined == 0 {
		t.Fatal("no fault hit after the new device joined: the rerun's finishing path is untested")
	}
}

// restoreBelowProfile: fsck reports only chunks below the set's profiles
// (exit 4), and a bare balance moves them back.
func restoreBelowProfile(t *testing.T, dir, image string) {
	t.Helper()
	for _, p := range fsckProblems(t, must(t, run(t, dir, "fsck.ddfs", "-n", "--json", image), 4)) {
		if p.Code != "CHUNK_BELOW_PROFILE" {
			t.Fatalf("unexpected problem %+v", p)
		}
	}
	must(t, run(t, dir, "ddfs", "balance", image), 0)
}
