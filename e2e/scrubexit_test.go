package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestScrubNodeLost: with both copies of the csum tree's root bad (a node
// whose copies are all bad) and one copy of the fs root bad, `scrub
// --repair --json` repairs the fs root, lists the csum root in
// nodes_unread and errors, prints the whole report and exits 4 with one
// stderr line (it used to stop at the csum tree: exit 1, no report); a
// set with nothing bad exits 0, one whose bad copies were all rewritten 1.
func TestScrubNodeLost(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-m", "raid1", "-d", "raid1", "a.img", "b.img"), 0)
	src, _ := filepath.Abs("../format")
	must(t, run(t, dir, "ddfs", "cp", "-r", src, "a.img:/"), 0)
	must(t, run(t, dir, "ddfs", "scrub", "a.img"), 0)
	in := getInfo(t, dir, "a.img")
	imgs := map[uint64]string{1: "a.img", 2: "b.img"}
	var csum uint64
	for _, r := range in.Roots {
		devs, offs := physical(in, r.Logical)
		switch r.Tree {
		case "csum":
			csum = r.Logical
			for i := range devs {
				flipAt(t, filepath.Join(dir, imgs[devs[i]]), int64(offs[i])+100)
			}
		case "fs":
			flipAt(t, filepath.Join(dir, imgs[devs[1]]), int64(offs[1])+100)
		}
	}
	type report struct {
		Devices []struct {
			ErrorsCorrected     uint64 `json:"errors_corrected"`
			ErrorsUncorrectable uint64 `json:"errors_uncorrectable"`
		} `json:"devices"`
		NodesUnread []struct {
			Tree    string `json:"tree"`
			Logical uint64 `json:"logical"`
		} `json:"nodes_unread"`
	}
	scrub := func(code int, args ...string) (rep report, corrected, unc uint64) {
		t.Helper()
		r := must(t, run(t, dir, "ddfs", append([]string{"scrub", "--json"}, args...)...), code)
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("scrub %v: no report: %v\n%s\nstderr: %s", args, err, r.stdout, r.stderr)
		}
		if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); code == 4 && (len(lines) != 1 || !strings.HasPrefix(lines[0], "ddfs: scrub: a.img: ")) {
			t.Errorf("scrub %v: stderr %q, want one line", args, r.stderr)
		}
		for _, d := range rep.Devices {
			corrected, unc = corrected+d.ErrorsCorrected, unc+d.ErrorsUncorrectable
		}
		return rep, corrected, unc
	}
	rep, corrected, unc := scrub(4, "--repair", "a.img")
	if len(rep.NodesUnread) != 1 || rep.NodesUnread[0].Tree != "csum" || rep.NodesUnread[0].Logical != csum || corrected != 1 || unc != 2 {
		t.Fatalf("scrub --repair: unread %+v, corrected %d, uncorrectable %d", rep.NodesUnread, corrected, unc)
	}
	if _, corrected, unc := scrub(4, "a.img"); corrected != 0 || unc != 2 {
		t.Fatalf("scrub after the repair: corrected %d, uncorrectable %d (the fs root is whole again)", corrected, unc)
	}
	// Bad copies all rewritten: 1.
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-f", "-b", "256M", "-m", "raid1", "-d", "raid1", "a.img", "b.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-r", src, "a.img:/"), 0)
	corruptNodeCopy(t, dir)
	if _, corrected, unc := scrub(1, "--repair", "a.img"); corrected != 1 || unc != 0 {
		t.Fatalf("one bad copy: corrected %d, uncorrectable %d", corrected, unc)
	}
	scrub(0, "a.img")
}
