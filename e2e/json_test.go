package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// documentedKeys are the keys of docs/json.md's table (its first column).
func documentedKeys(t *testing.T) map[string]bool {
	b, err := os.ReadFile("../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	tick := regexp.MustCompile("`([a-z_0-9]+)`")
	for _, line := range strings.Split(string(b), "\n") {
		if cols := strings.Split(line, "|"); len(cols) > 2 && strings.HasPrefix(line, "| `") {
			for _, m := range tick.FindAllStringSubmatch(cols[1], -1) {
				keys[m[1]] = true
			}
		}
	}
	if len(keys) < 90 {
		t.Fatalf("docs/json.md: only %d keys", len(keys))
	}
	return keys
}

// jsonKeys collects every object key in v, except under the maps that
// docs/json.md says are keyed by names (skip).
func jsonKeys(v any, skip map[string]bool, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if strings.Contains(k, "/") { // device usage: "data/raid1"
				continue
			}
			out[k] = true
			if !skip[k] {
				jsonKeys(e, skip, out)
			}
		}
	case []any:
		for _, e := range x {
			jsonKeys(e, skip, out)
		}
	}
}

// TestJSONVocabulary runs every command that reports with --json (and
// --stats=json) on a dedupe raid1 set with a damaged node, and wants
// valid JSON whose every key docs/json.md documents: one vocabulary.
func TestJSONVocabulary(t *testing.T) {
	doc := documentedKeys(t)
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-d", "raid1", "-m", "raid1", "--dedupe", "a.img", "b.img"), 0)
	src, _ := filepath.Abs("../format")
	must(t, run(t, dir, "ddfs", "cp", "-r", src, "a.img:/"), 0)
	must(t, run(t, dir, "ddfs", "xattr", "set", "a.img:/format/doc.go", "user.k", "v"), 0)
	cmds := [][]string{
		{"ddfs", "info", "--json", "a.img"}, {"ddfs", "df", "--json", "a.img"}, {"ddfs", "stat", "--json", "a.img:/format/doc.go"},
		{"ddfs", "ls", "--json", "a.img:/format"}, {"ddfs", "du", "--json", "-a", "a.img:/"}, {"ddfs", "xattr", "list", "--json", "a.img:/format/doc.go"},
		{"ddfs", "device", "usage", "--json", "a.img"}, {"ddfs", "scrub", "--json", "a.img"}, {"ddfs", "inspect", "dump-super", "--json", "a.img"},
		{"fsck.ddfs", "--list-codes", "--json"}, {"trimtool", "--json", "-n", "a.img"}, {"trimtool", "policy", "--json", "a.img"},
		{"dedupe-tool", "status", "--json", "a.img"}, {"dedupe-tool", "estimate", "--json", "a.img"}, {"dedupe-tool", "run", "--json", "a.img"},
		{"dedupe-tool", "index", "rebuild", "--json", "a.img"}, {"ddfs", "set-uuid", "--json", "a.img"},
	}
	var found map[string]bool
	check := func(c []string, out string, skip map[string]bool) {
		t.Helper()
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Errorf("%v: not JSON: %v\n%s", c, err, out)
			return
		}
		found = map[string]bool{}
		jsonKeys(v, skip, found)
		for k := range found {
			if !doc[k] {
				t.Errorf("%v: key %q is not in docs/json.md", c, k)
			}
		}
	}
	for _, c := range cmds {
		check(c, must(t, run(t, dir, c[0], c[1:]...), 0).stdout, nil)
	}
	// Property names are keys of prop get (documented as such).
	var props map[string]any
	json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "prop", "get", "--json", "a.img"), 0).stdout), &props)
	if _, ok := props["alloc-policy"]; !ok || len(props) < 5 {
		t.Errorf("prop get --json: %v", props)
	}
	// --stats=json, one shape on every tool.
	r := must(t, run(t, dir, "ddfs", "cat", "--stats=json", "a.img:/format/doc.go"), 0)
	check([]string{"ddfs", "cat", "--stats=json"}, r.stderr, nil)
	// fsck clean, then with a problem: a flipped byte in a node's copy on b.img.
	r = run(t, dir, "fsck.ddfs", "--json", "a.img")
	check([]string{"fsck.ddfs", "--json"}, r.stdout, map[string]bool{"tree_nodes": true})
	corruptNodeCopy(t, dir)
	r = run(t, dir, "fsck.ddfs", "--json", "a.img")
	if r.code != 4 {
		t.Fatalf("fsck of a damaged copy: exit %d", r.code)
	}
	check([]string{"fsck.ddfs", "--json", "(damaged)"}, r.stdout, map[string]bool{"tree_nodes": true})
	for _, k := range []string{"code", "pass", "copy", "devid", "offset", "fixed"} {
		if !found[k] {
			t.Errorf("fsck --json of a damaged set has no %q", k)
		}
	}
}

// corruptNodeCopy flips a byte inside the first fs tree node's copy on
// the second device (as ddfs inspect map places it).
func corruptNodeCopy(t *testing.T, dir string) {
	t.Helper()
	in := getInfo(t, dir, "a.img")
	for _, r := range in.Roots {
		if r.Tree == "fs" {
			devs, offs := physical(in, r.Logical)
			for i, d := range devs {
				if d == 2 {
					flipAt(t, dir+"/b.img", int64(offs[i])+100)
					return
				}
			}
		}
	}
	t.Fatal("no copy of the fs root on device 2")
}
