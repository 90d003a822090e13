package e2e

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// runIn runs a binary with stdin; a shell line when name is "sh".
func runIn(t *testing.T, dir string, stdin []byte, name string, args ...string) result {
	t.Helper()
	bin := name
	if name != "sh" {
		bin = filepath.Join(binDir, name)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+binDir+":"+os.Getenv("PATH"))
	cmd.Stdin = bytes.NewReader(stdin)
	return runCmd(t, cmd)
}

type statOut struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
	UID  uint32 `json:"uid"`
	Size uint64 `json:"size"`
}

func statJSON(t *testing.T, dir, p string) statOut {
	t.Helper()
	var s statOut
	if err := json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "stat", "--json", p), 0).stdout), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCpStreams: cp - IMG:/x reads stdin into a new or replaced file
// (0666 less the umask, owned by the caller), cp IMG:/x - writes it to
// stdout with holes as zeros, directories are refused both ways.
func TestCpStreams(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	// More than one copy buffer (8 MiB), ending in zeros (a trailing hole).
	data := make([]byte, 9<<20+123)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data[:9<<20-5000] {
		data[i] = byte(rng.Uint32())
	}
	must(t, runIn(t, dir, data, "sh", "-c", "umask 027; exec ddfs cp - d.img:/big"), 0)
	if s := statJSON(t, dir, "d.img:/big"); s.Mode != "0640" || s.UID != uint32(os.Getuid()) || s.Size != uint64(len(data)) {
		t.Fatalf("stdin file: %+v", s)
	}
	if r := must(t, run(t, dir, "ddfs", "cp", "d.img:/big", "-"), 0); r.stdout != string(data) {
		t.Fatalf("cp to stdout: %d bytes, want %d the same", len(r.stdout), len(data))
	}
	// Replace: the new file has the new mode and bytes; -n keeps the old.
	must(t, run(t, dir, "ddfs", "chmod", "600", "d.img:/big"), 0)
	must(t, runIn(t, dir, []byte("short\n"), "sh", "-c", "umask 022; exec ddfs cp - d.img:/big"), 0)
	if s := statJSON(t, dir, "d.img:/big"); s.Mode != "0644" || s.Size != 6 {
		t.Fatalf("replaced: %+v", s)
	}
	must(t, runIn(t, dir, []byte("other\n"), "ddfs", "cp", "-n", "-", "d.img:/big"), 0)
	if r := must(t, run(t, dir, "ddfs", "cat", "d.img:/big"), 0); r.stdout != "short\n" {
		t.Fatalf("-n replaced the file: %q", r.stdout)
	}
	// Empty stdin makes an empty file.
	must(t, runIn(t, dir, nil, "ddfs", "cp", "-", "d.img:/empty"), 0)
	if s := statJSON(t, dir, "d.img:/empty"); s.Size != 0 {
		t.Fatalf("empty: %+v", s)
	}
	// A sparse file streams its holes as zeros.
	sparse := filepath.Join(dir, "sparse")
	f, _ := os.Create(sparse)
	f.WriteAt([]byte("end"), 5<<20)
	f.Close()
	must(t, run(t, dir, "ddfs", "cp", "sparse", "d.img:/sparse"), 0)
	want := append(make([]byte, 5<<20), "end"...)
	if r := must(t, run(t, dir, "ddfs", "cp", "d.img:/sparse", "-"), 0); r.stdout != string(want) {
		t.Fatalf("sparse to stdout: %d bytes", len(r.stdout))
	}
	// Several sources go to stdout one after the other.
	if r := must(t, run(t, dir, "ddfs", "cp", "d.img:/big", "d.img:/big", "-"), 0); r.stdout != "short\nshort\n" {
		t.Fatalf("two to stdout: %q", r.stdout)
	}
	must(t, run(t, dir, "ddfs", "mkdir", "d.img:/dir"), 0)
	r := must(t, run(t, dir, "ddfs", "cp", "d.img:/dir", "-"), 1)
	if r.stderr != "ddfs: cp: d.img:/dir: omitting directory (only files go to stdout)\n" || r.stdout != "" {
		t.Fatalf("dir to stdout: %q %q", r.stderr, r.stdout)
	}
	r = must(t, runIn(t, dir, []byte("x"), "ddfs", "cp", "-", "d.img:/dir"), 1)
	if r.stderr != "ddfs: cp: d.img:/dir: Is a directory\n" {
		t.Fatalf("stdin into dir: %q", r.stderr)
	}
	must(t, run(t, dir, "fsck.ddfs", "d.img"), 0)
}

// globTree makes d.img with /src holding a.go b.go .h.go c.txt star*
// starx lit[1] sub/d.go and 0.txt (made last: first only when matches
// are sorted); each file holds its name and a newline.
func globTree(t *testing.T, dir string) {
	t.Helper()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "-p", "d.img:/src/sub"), 0)
	for _, n := range []string{"a.go", "b.go", ".h.go", "c.txt", "star*", "starx", "lit[1]", "sub/d.go", "0.txt"} {
		must(t, runIn(t, dir, []byte(n+"\n"), "ddfs", "cp", "-", "d.img:/src/"+n), 0)
	}
}

// TestImageGlobs: quoted patterns expand inside the image for cat, stat,
// rm and cp: per element, sorted, hidden names only for a '.' pattern,
// '\' escapes, a literal name with brackets still works, and no match is
// "IMAGE:PATTERN: No such file or directory", exit 1.
func TestImageGlobs(t *testing.T) {
	dir := t.TempDir()
	globTree(t, dir)
	for pat, want := range map[string]string{
		"/src/*.go":      "a.go\nb.go\n",
		"/src/.*":        ".h.go\n",
		"/*/*.txt":       "0.txt\nc.txt\n",
		"/src/[ab].go":   "a.go\nb.go\n",
		"/src/[!a].go":   "b.go\n",
		"/src/?.go":      "a.go\nb.go\n",
		"/src/*/*.go":    "sub/d.go\n",
		`/src/star\*`:    "star*\n",
		"/src/star?":     "star*\nstarx\n",
		"/src/lit[1]":    "lit[1]\n",
		"/s?c/sub/d.go":  "sub/d.go\n",
		"/src/*.go/none": "",
	} {
		r := run(t, dir, "ddfs", "cat", "d.img:"+pat)
		if want == "" {
			if r.code != 1 || r.stderr != "ddfs: cat: d.img:"+pat+": No such file or directory\n" {
				t.Errorf("cat %s: exit %d %q", pat, r.code, r.stderr)
			}
			continue
		}
		if r.code != 0 || r.stdout != want {
			t.Errorf("cat %s: exit %d %q, want %q (%s)", pat, r.code, r.stdout, want, r.stderr)
		}
	}
	r := must(t, run(t, dir, "ddfs", "cat", "d.img:/src/*.x"), 1)
	if r.stderr != "ddfs: cat: d.img:/src/*.x: No such file or directory\n" {
		t.Errorf("no match: %q", r.stderr)
	}
	var st []statOut
	json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "stat", "--json", "d.img:/src/*.go"), 0).stdout), &st)
	if len(st) != 2 || st[0].Path != "/src/a.go" || st[1].Path != "/src/b.go" {
		t.Errorf("stat: %+v", st)
	}
	// cp out, inside, and the target must be a directory for several.
	must(t, run(t, dir, "ddfs", "cp", "d.img:/src/*.go", "."), 0)
	if b, err := os.ReadFile(filepath.Join(dir, "b.go")); err != nil || string(b) != "b.go\n" {
		t.Errorf("cp out: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".h.go")); err == nil {
		t.Errorf("cp out copied a hidden file")
	}
	must(t, run(t, dir, "ddfs", "cp", "d.img:/src/*.go", "nodir"), 1)
	must(t, run(t, dir, "ddfs", "cp", "d.img:/src/*.go", "d.img:/src/c.txt"), 1)
	must(t, run(t, dir, "ddfs", "mkdir", "d.img:/to"), 0)
	must(t, run(t, dir, "ddfs", "cp", "d.img:/src/*.go", "d.img:/to"), 0)
	if r := must(t, run(t, dir, "ddfs", "ls", "d.img:/to"), 0); r.stdout != "a.go\nb.go\n" {
		t.Errorf("cp inside: %q", r.stdout)
	}
	// rm removes the matches only; -f ignores a pattern matching nothing.
	must(t, run(t, dir, "ddfs", "rm", "d.img:/src/*.go"), 0)
	if r := must(t, run(t, dir, "ddfs", "ls", "-a", "d.img:/src"), 0); strings.Contains(r.stdout, "a.go") || !strings.Contains(r.stdout, ".h.go") {
		t.Errorf("after rm: %q", r.stdout)
	}
	must(t, run(t, dir, "ddfs", "rm", "-f", "d.img:/src/*.none"), 0)
	must(t, run(t, dir, "ddfs", "rm", "d.img:/src/*.none"), 1)
	must(t, run(t, dir, "fsck.ddfs", "d.img"), 0)
}

// TestGlobRefusesCraftedEntry: an entry fsck flags (a second name for a
// directory) is never matched or walked: the command fails naming it.
func TestGlobRefusesCraftedEntry(t *testing.T) {
	dir := t.TempDir()
	globTree(t, dir)
	must(t, run(t, dir, "ddfs", "mkdir", "d.img:/b"), 0)
	craftImage(t, filepath.Join(dir, "d.img"), func(f *fsys.FS, tr *btree.Tree) {
		b, src := resolveIno(t, f, "/b"), resolveIno(t, f, "/src")
		e := format.DirEntry{Ino: src, Type: format.FileTypeDir, Name: "alias"}
		tr.Put(format.Key{ObjectID: b, Type: format.DirItemKey, Offset: format.NameHash([]byte("alias"))}, format.MarshalDirEntries([]format.DirEntry{e}))
		tr.Put(format.Key{ObjectID: b, Type: format.DirIndexKey, Offset: 1000}, format.MarshalDirEntry(e))
	})
	r := run(t, dir, "ddfs", "cat", "d.img:/b/*/a.go")
	oneLine(t, r, "cat", "d.img:/b/alias")
	if r.stdout != "" {
		t.Errorf("followed the refused entry: %q", r.stdout)
	}
	oneLine(t, run(t, dir, "ddfs", "rm", "-r", "d.img:/b/*"), "rm", "d.img:/b/alias")
}
