package e2e

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// documentedKeys are the report keys of docs/json.md.
func documentedKeys(t *testing.T) map[string]bool {
	report, _ := docTables(t)
	return report
}

// docTables are the keys of docs/json.md's tables (their first column):
// report keys, and the on-disk fields of the inspect dumps (the table
// under the heading "## On-disk fields").
func docTables(t *testing.T) (report, onDisk map[string]bool) {
	b, err := os.ReadFile("../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	report, onDisk = map[string]bool{}, map[string]bool{}
	keys := report
	tick := regexp.MustCompile("`([a-z_0-9]+)`")
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "## ") {
			keys = report
			if strings.HasPrefix(line, "## On-disk fields") {
				keys = onDisk
			}
		}
		if cols := strings.Split(line, "|"); len(cols) > 2 && strings.HasPrefix(line, "| `") {
			for _, m := range tick.FindAllStringSubmatch(cols[1], -1) {
				keys[m[1]] = true
			}
		}
	}
	if len(report) < 90 || len(onDisk) < 30 {
		t.Fatalf("docs/json.md: only %d report keys, %d on-disk fields", len(report), len(onDisk))
	}
	return report, onDisk
}

// onDiskParents hold on-disk structures (FORMAT.md's fields) in the
// inspect dumps: their keys are checked against the on-disk table.
var onDiskParents = map[string]bool{"key": true, "item": true}

// nameKeyed maps are keyed by names, not vocabulary (docs/json.md).
var nameKeyed = map[string]bool{"tree_nodes": true}

// jsonKeys collects every object key in v, except under the maps that
// docs/json.md says are keyed by names (skip).
func jsonKeys(v any, skip map[string]bool, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
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

// allKeys collects every object key in v: report keys into out, those
// inside on-disk structures into disk.
func allKeys(v any, inDisk bool, out, disk map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if inDisk {
				disk[k] = true
			} else {
				out[k] = true
			}
			if !nameKeyed[k] {
				allKeys(e, inDisk || onDiskParents[k], out, disk)
			}
		}
	case []any:
		for _, e := range x {
			allKeys(e, inDisk, out, disk)
		}
	}
}

// section returns the lines of help text after the line head, up to the
// next blank line.
func section(help, head string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(help, "\n") {
		switch {
		case l == head:
			in = true
		case in && strings.TrimSpace(l) == "":
			return out
		case in:
			out = append(out, l)
		}
	}
	return out
}

var jsonFlag = regexp.MustCompile(`^\s+(-\w, )?--json\b`)

// jsonCommands walks `TOOL [CMD...] --help` through every command and
// returns the commands whose options include --json ("ddfs device usage").
func jsonCommands(t *testing.T, dir string, path ...string) []string {
	t.Helper()
	help := must(t, run(t, dir, path[0], append(path[1:], "--help")...), 0).stdout
	var out []string
	for _, l := range section(help, "Options:") {
		if jsonFlag.MatchString(l) {
			out = append(out, strings.Join(path, " "))
			break
		}
	}
	for _, l := range section(help, "Commands:") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] == "help" || f[0] == "completion" {
			continue
		}
		out = append(out, jsonCommands(t, dir, append(path[:len(path):len(path)], f[0])...)...)
	}
	return out
}

// decodeAll decodes one JSON value, or several (JSON Lines), from s.
func decodeAll(s string) ([]any, error) {
	var vs []any
	d := json.NewDecoder(strings.NewReader(s))
	for {
		var v any
		if err := d.Decode(&v); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return nil, errors.New("no JSON value")
	}
	return vs, nil
}

// jsonRun is one --json invocation: the command it exercises, its
// arguments and its exit code.
type jsonRun struct {
	cmd  string
	args []string
	code int
}

// TestJSONVocabulary runs every command whose --help lists --json, as the
// five tools list them (a command with --json and no run here fails), on
// a dedupe raid1 set with a damaged node, a degraded set and a fallback
// chunk, and wants valid JSON whose every key docs/json.md documents: one
// vocabulary.
func TestJSONVocabulary(t *testing.T) {
	doc, docDisk := docTables(t)
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-d", "raid1", "-m", "raid1", "--dedupe", "a.img", "b.img"), 0)
	src, _ := filepath.Abs("../format")
	must(t, run(t, dir, "ddfs", "cp", "-r", src, "a.img:/"), 0)
	must(t, run(t, dir, "ddfs", "xattr", "set", "a.img:/format/doc.go", "user.k", "v"), 0)
	// A degraded set (devices[].missing) and a fallback chunk (fallbacks[]).
	os.Mkdir(filepath.Join(dir, "deg"), 0o755)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "64M", "-d", "raid1", "-m", "raid1", "deg/x.img", "deg/y.img"), 0)
	os.Remove(filepath.Join(dir, "deg/y.img"))
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-m", "raid1", "--alloc-policy", "ssd-metadata", "s.img", "h.img:rotational=1"), 0)
	logical := strconv.FormatUint(getInfo(t, dir, "a.img").Roots[0].Logical, 10)
	// A snapshot of its own image: fsck checks its tree too.
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "64M", "snap.img"), 0)
	must(t, run(t, dir, "ddfs", "snapshot", "create", "snap.img", "s1"), 0)
	must(t, run(t, dir, "ddfs", "send", "snap.img@s1", "-o", "s1.stream"), 0)
	must(t, run(t, dir, "ddfs", "receive", "-q", "snap.img", "-i", "s1.stream"), 1) // s1 exists there
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "64M", "recv.img"), 0)
	must(t, run(t, dir, "ddfs", "receive", "-q", "recv.img", "-i", "s1.stream"), 0)

	runs := []jsonRun{
		{"ddfs info", []string{"info", "--json", "a.img"}, 0},
		{"ddfs info", []string{"info", "--json", "--degraded", "deg/x.img"}, 0},
		{"ddfs info", []string{"info", "--json", "a.img", "nosuch.img"}, 1},
		{"ddfs df", []string{"df", "--json", "a.img"}, 0},
		{"ddfs df", []string{"df", "--json", "s.img"}, 0},
		{"ddfs df", []string{"df", "--json", "--degraded", "deg/x.img"}, 0},
		{"ddfs stat", []string{"stat", "--json", "a.img:/format/doc.go"}, 0},
		{"ddfs ls", []string{"ls", "--json", "a.img:/format"}, 0},
		{"ddfs du", []string{"du", "--json", "-a", "a.img:/"}, 0},
		{"ddfs xattr", []string{"xattr", "list", "--json", "a.img:/format/doc.go"}, 0},
		{"ddfs prop", []string{"prop", "get", "--json", "a.img"}, 0},
		{"ddfs prop", []string{"prop", "get", "--json", "a.img:/format"}, 0},
		{"ddfs device usage", []string{"device", "usage", "--json", "a.img"}, 0},
		{"ddfs device usage", []string{"device", "usage", "--json", "--degraded", "deg/x.img"}, 0},
		{"ddfs scrub", []string{"scrub", "--json", "a.img"}, 0},
		{"ddfs inspect dump-super", []string{"inspect", "dump-super", "--json", "a.img"}, 0},
		{"ddfs inspect dump-tree", []string{"inspect", "dump-tree", "--json", "--tree", "fs", "a.img"}, 0},
		{"ddfs inspect dump-tree", []string{"inspect", "dump-tree", "--json", "--tree", "extent", "a.img"}, 0},
		{"ddfs inspect dump-tree", []string{"inspect", "dump-tree", "--json", "--tree", "chunk", "a.img"}, 0},
		{"ddfs inspect dump-tree", []string{"inspect", "dump-tree", "--json", "--tree", "dedupe", "a.img"}, 0},
		{"ddfs inspect inode", []string{"inspect", "inode", "--json", "a.img:/format/doc.go"}, 0},
		{"ddfs inspect map", []string{"inspect", "map", "--json", "a.img", logical}, 0},
		{"mkfs.ddfs", []string{"--json", "-b", "64M", "m.img"}, 0},
		{"fsck.ddfs", []string{"--list-codes", "--json"}, 0},
		{"fsck.ddfs", []string{"--json", "a.img"}, 0},
		{"fsck.ddfs", []string{"--json", "snap.img"}, 0},
		{"trimtool", []string{"--json", "-n", "a.img"}, 0},
		{"trimtool policy", []string{"policy", "--json", "a.img"}, 0},
		{"dedupe-tool status", []string{"status", "--json", "a.img"}, 0},
		{"dedupe-tool estimate", []string{"estimate", "--json", "a.img"}, 0},
		{"dedupe-tool run", []string{"run", "--json", "a.img"}, 0},
		{"dedupe-tool index", []string{"index", "rebuild", "--json", "a.img"}, 0},
		{"dedupe-tool index", []string{"index", "prune", "--max-entries", "10", "--json", "a.img"}, 0},
		{"ddfs rescue", []string{"rescue", "--json", "a.img", "rescued"}, 0},
		{"ddfs set-uuid", []string{"set-uuid", "--json", "a.img"}, 0},
		{"ddfs snapshot list", []string{"snapshot", "list", "--json", "snap.img"}, 0},
		{"ddfs snapshot list", []string{"snapshot", "list", "--json", "recv.img"}, 0},
		{"ddfs export", []string{"export", "--json", "a.img:/format", "x.sqfs", "--type", "squashfs"}, 0},
	}
	ran := map[string]bool{}
	for _, r := range runs {
		ran[r.cmd] = true
	}
	var listed []string
	for _, tool := range []string{"ddfs", "mkfs.ddfs", "fsck.ddfs", "trimtool", "dedupe-tool"} {
		listed = append(listed, jsonCommands(t, dir, tool)...)
	}
	if len(listed) < 20 {
		t.Fatalf("only %d commands with --json found: %v", len(listed), listed)
	}
	for _, c := range listed {
		if !ran[c] {
			t.Errorf("%s has --json and TestJSONVocabulary does not run it", c)
		}
		delete(ran, c)
	}
	for c := range ran {
		t.Errorf("TestJSONVocabulary runs %q, which has no --json in its --help", c)
	}

	var found map[string]bool
	check := func(what, out string) {
		t.Helper()
		vs, err := decodeAll(out)
		if err != nil {
			t.Errorf("%s: not JSON: %v\n%s", what, err, out)
			return
		}
		found = map[string]bool{}
		disk := map[string]bool{}
		for _, v := range vs {
			allKeys(v, false, found, disk)
		}
		for _, k := range sortedKeys(found) {
			if !doc[k] {
				t.Errorf("%s: key %q is not in docs/json.md", what, k)
			}
		}
		for _, k := range sortedKeys(disk) {
			if !docDisk[k] {
				t.Errorf("%s: on-disk field %q is not in docs/json.md's On-disk fields", what, k)
			}
		}
	}
	for _, r := range runs {
		tool := strings.Fields(r.cmd)[0]
		res := must(t, run(t, dir, tool, r.args...), r.code)
		check(tool+" "+strings.Join(r.args, " "), res.stdout)
	}
	// --stats=json, one shape on every tool.
	r := must(t, run(t, dir, "ddfs", "cat", "--stats=json", "a.img:/format/doc.go"), 0)
	check("ddfs cat --stats=json", r.stderr)
	// fsck with a problem: a flipped byte in a node's copy on b.img.
	corruptNodeCopy(t, dir)
	r = run(t, dir, "fsck.ddfs", "--json", "a.img")
	if r.code != 4 {
		t.Fatalf("fsck of a damaged copy: exit %d", r.code)
	}
	check("fsck.ddfs --json (damaged)", r.stdout)
	for _, k := range []string{"code", "pass", "copy", "devid", "offset", "fixed"} {
		if !found[k] {
			t.Errorf("fsck --json of a damaged set has no %q", k)
		}
	}
	// scrub names the bad copy with fsck's keys and numbers.
	var fsck struct{ Problems []badCopy }
	json.Unmarshal([]byte(r.stdout), &fsck)
	sr := must(t, run(t, dir, "ddfs", "scrub", "--json", "a.img"), 4)
	check("ddfs scrub --json (damaged)", sr.stdout)
	var scrub struct{ Errors []badCopy }
	json.Unmarshal([]byte(sr.stdout), &scrub)
	if len(fsck.Problems) != 1 || len(scrub.Errors) != 1 || fsck.Problems[0] != scrub.Errors[0] || scrub.Errors[0].DevID != 2 {
		t.Errorf("one bad copy: fsck says %+v, scrub %+v", fsck.Problems, scrub.Errors)
	}
}

// badCopy is a bad copy as fsck (problems[]) and scrub (errors[]) name it.
type badCopy struct {
	Logical uint64 `json:"logical"`
	Copy    int    `json:"copy"`
	DevID   uint64 `json:"devid"`
	Offset  uint64 `json:"offset"`
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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

// TestJSONOneKeyPerQuantity: what ddfs info, df, device usage and prop
// get share they print under one key with one value: per device devid,
// path, size, allocated (and with device usage the tier and properties,
// with df unallocated); for the set total_bytes, used, alloc_policy.
func TestJSONOneKeyPerQuantity(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-m", "raid1", "--alloc-policy", "tiered", "s.img", "h.img:rotational=1"), 0)
	src, _ := filepath.Abs("../format")
	must(t, run(t, dir, "ddfs", "cp", "-r", src, "s.img:/"), 0)
	obj := func(args ...string) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", args...), 0).stdout), &m); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return m
	}
	info, df, prop := obj("info", "--json", "s.img"), obj("df", "--json", "s.img"), obj("prop", "get", "--json", "s.img")
	var usage []any
	json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "device", "usage", "--json", "s.img"), 0).stdout), &usage)
	same := func(what string, a, b map[string]any, keys ...string) {
		t.Helper()
		for _, k := range keys {
			if a[k] == nil || !reflect.DeepEqual(a[k], b[k]) {
				t.Errorf("%s: %q is %v and %v", what, k, a[k], b[k])
			}
		}
	}
	same("info, df", info, df, "total_bytes", "used", "alloc_policy")
	same("info, prop get", info, prop, "alloc_policy")
	devs, dfDevs := info["devices"].([]any), df["devices"].([]any)
	if len(devs) != 2 || len(dfDevs) != 2 || len(usage) != 2 {
		t.Fatalf("devices: info %v, df %v, device usage %v", devs, dfDevs, usage)
	}
	for i := range devs {
		d, f, u := devs[i].(map[string]any), dfDevs[i].(map[string]any), usage[i].(map[string]any)
		same("info, df devices", d, f, "devid", "path", "size", "allocated")
		same("info, device usage", d, u, "devid", "path", "size", "allocated", "uuid", "rotational", "seek_speed", "bandwidth", "tier")
		same("df, device usage", f, u, "unallocated")
		var sum float64
		for _, ty := range u["types"].([]any) {
			sum += ty.(map[string]any)["allocated"].(float64)
		}
		if sum != u["allocated"] {
			t.Errorf("device usage %v: types sum to %v", u["devid"], sum)
		}
	}
	// A prop get --json key names the property to prop set and get too.
	must(t, run(t, dir, "ddfs", "prop", "set", "s.img", "small_data_max", "64K"), 0)
	if r := must(t, run(t, dir, "ddfs", "prop", "get", "s.img", "small_data_max"), 0); r.stdout != "small-data-max=65536\n" {
		t.Errorf("prop get small_data_max: %q", r.stdout)
	}
}
