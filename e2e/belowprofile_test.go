package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// belowProfileSet makes a raid1 set of two images, writes src with the
// second one away (its chunks land single and dup on d0.img only), and
// puts it back: the set is whole again, those chunks are not.
func belowProfileSet(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	mkfsProfile(t, dir, "1G", "raid1", 2)
	files := randomTree(t, dir, 7)
	away := filepath.Join(dir, "away")
	if err := os.Mkdir(away, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "d1.img"), filepath.Join(away, "d1.img")); err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "ddfs", "cp", "-r", "--degraded", "src", "d0.img:/"), 0)
	if err := os.Rename(filepath.Join(away, "d1.img"), filepath.Join(dir, "d1.img")); err != nil {
		t.Fatal(err)
	}
	return files
}

// exposure is the part of fsck's and scrub's --json this test reads.
type exposure struct {
	BelowProfile int `json:"below_profile"`
	Exposure     []struct {
		DevID  uint64 `json:"devid"`
		Path   string `json:"path"`
		Chunks int    `json:"chunks"`
		Used   uint64 `json:"used"`
	} `json:"exposure"`
}

func exposureOf(t *testing.T, r result) exposure {
	t.Helper()
	var e exposure
	if err := json.Unmarshal([]byte(r.stdout), &e); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	return e
}

// TestBelowProfileRestored is issue 36's "redundancy lost is a
// problem": chunks a degraded raid1 set made are reported by fsck
// (CHUNK_BELOW_PROFILE, exit 4) and scrub (exit 4) with what losing
// d0.img would cost, a writable open says so on stderr, and each of
// fsck -y, scrub --repair and a bare balance restores raid1: then fsck
// is clean, nothing is exposed, and every file reads with either image
// gone.
func TestBelowProfileRestored(t *testing.T) {
	for _, fix := range []struct {
		cmd  []string
		exit int
	}{
		{[]string{"fsck.ddfs", "-y", "d0.img"}, 1},
		{[]string{"ddfs", "scrub", "--repair", "d0.img"}, 1},
		{[]string{"ddfs", "balance", "d0.img"}, 0},
	} {
		t.Run(fix.cmd[0]+"-"+fix.cmd[1], func(t *testing.T) {
			dir := t.TempDir()
			files := belowProfileSet(t, dir)
			r := must(t, run(t, dir, "ddfs", "mkdir", "d0.img:/x"), 0)
			if !strings.Contains(r.stderr, "ddfs: mkdir: d0.img: ") || !strings.Contains(r.stderr, "below the set's profiles") || !strings.Contains(r.stderr, "ddfs balance d0.img") {
				t.Fatalf("writable open says %q, want the chunks below the profiles and the balance to run", r.stderr)
			}
			r = must(t, run(t, dir, "fsck.ddfs", "-n", "--json", "d0.img"), 4)
			probs := fsckProblems(t, r)
			for _, p := range probs {
				if p.Code != "CHUNK_BELOW_PROFILE" {
					t.Fatalf("unexpected problem %+v", p)
				}
			}
			for _, e := range []exposure{exposureOf(t, r), exposureOf(t, must(t, run(t, dir, "ddfs", "scrub", "--json", "d0.img"), 4))} {
				if len(probs) < 2 || len(e.Exposure) != 1 || e.Exposure[0].DevID != 1 || e.Exposure[0].Path != "d0.img" || e.Exposure[0].Chunks != len(probs) || e.Exposure[0].Used < 3<<20 {
					t.Fatalf("%d problems, exposure %+v: want data and metadata below, losing devid 1 (d0.img) costs them", len(probs), e.Exposure)
				}
			}
			must(t, run(t, dir, fix.cmd[0], fix.cmd[1:]...), fix.exit)
			if e := exposureOf(t, must(t, run(t, dir, "fsck.ddfs", "-n", "--json", "d0.img"), 0)); len(e.Exposure) != 0 {
				t.Fatalf("after %v: exposure %+v", fix.cmd, e.Exposure)
			}
			if r := must(t, run(t, dir, "ddfs", "mkdir", "d0.img:/y"), 0); r.stderr != "" {
				t.Fatalf("after %v a writable open still says %q", fix.cmd, r.stderr)
			}
			loseEachRead(t, dir, []string{"d0.img", "d1.img"}, files)
		})
	}
}

// loseEachRead moves each image away in turn and reads every file back
// through the other with --degraded.
func loseEachRead(t *testing.T, dir string, imgs []string, files map[string][]byte) {
	t.Helper()
	for i, gone := range imgs {
		if err := os.Rename(filepath.Join(dir, gone), filepath.Join(dir, "away", gone)); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out-"+gone)
		must(t, run(t, dir, "ddfs", "cp", "-a", "--degraded", imgs[(i+1)%len(imgs)]+":/src", out), 0)
		for name, b := range files {
			got, err := os.ReadFile(filepath.Join(out, strings.TrimPrefix(name, "src/")))
			if err != nil || !bytes.Equal(got, b) {
				t.Fatalf("%s without %s: %d bytes, %v; want %d", name, gone, len(got), err, len(b))
			}
		}
		if err := os.Rename(filepath.Join(dir, "away", gone), filepath.Join(dir, gone)); err != nil {
			t.Fatal(err)
		}
	}
}
