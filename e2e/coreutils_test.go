package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// hostTree makes a tree with names that sort differently by name, size
// and time, a dotfile, a symlink, an executable and a fifo.
func hostTree(t *testing.T, root string) {
	t.Helper()
	os.MkdirAll(filepath.Join(root, "sub", "deep"), 0o755)
	files := map[string]int{"b.txt": 300, "A.txt": 5000, "c": 10, ".hidden": 7, "sub/x": 1, "sub/deep/y": 70000, "zz exec": 2}
	base := time.Unix(1700000000, 123456789)
	i := 0
	for name, size := range files {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte(strings.Repeat("q", size)), 0o644); err != nil {
			t.Fatal(err)
		}
		mt := base.Add(time.Duration(i*37%11) * time.Hour)
		os.Chtimes(p, mt, mt)
		i++
	}
	os.Chmod(filepath.Join(root, "zz exec"), 0o755)
	os.Symlink("b.txt", filepath.Join(root, "link"))
	syscall.Mkfifo(filepath.Join(root, "fifo"), 0o640)
	for _, d := range []string{"sub/deep", "sub", "."} {
		os.Chtimes(filepath.Join(root, d), base, base)
	}
}

// TestLsAgainstGNU lists the same tree in an image and on the host with
// GNU ls (LC_ALL=C) and wants the same names in the same order for every
// sort and selection flag, and the same long lines but for directory
// sizes and the total (allocation differs by design).
func TestLsAgainstGNU(t *testing.T) {
	gnu, err := exec.LookPath("ls")
	if err != nil {
		t.Skip("no ls(1)")
	}
	dir := t.TempDir()
	host := filepath.Join(dir, "tree")
	hostTree(t, host)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", "tree", "d.img:/"), 0)
	hostLs := func(args ...string) string {
		cmd := exec.Command(gnu, args...)
		cmd.Dir = dir
		cmd.Env = []string{"LC_ALL=C", "TZ=UTC"}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("ls %v: %v", args, err)
		}
		return string(out)
	}
	// Directory sizes differ by design (4096 on the host), so the -S
	// listings leave the one directory out.
	noDir := func(s string) string {
		var keep []string
		for _, l := range strings.SplitAfter(s, "\n") {
			if strings.TrimSuffix(l, "\n") != "sub" && !strings.HasSuffix(strings.TrimSuffix(l, "\n"), " sub") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "")
	}
	for _, flag := range []string{"", "-a", "-A", "-t", "-S", "-r", "-tr", "-Sr", "-F", "-aF", "-d", "-R", "-RA", "-1"} {
		args := []string{"tree"}
		if flag != "" {
			args = append([]string{flag}, args...)
		}
		want := hostLs(args...)
		got := must(t, run(t, dir, "ddfs", append([]string{"ls"}, append(args[:len(args)-1], "d.img:/tree")...)...), 0).stdout
		switch {
		case strings.Contains(flag, "R"):
			want = strings.ReplaceAll(want, "tree", "d.img:/tree") // headers name the image
		case flag == "-d":
			want = "/tree\n"
		case strings.Contains(flag, "S"):
			got, want = noDir(got), noDir(want)
		}
		if got != want {
			t.Errorf("ls %s:\nddfs:\n%s\nGNU:\n%s", flag, got, want)
		}
	}
	// -i: the inode number before each name, the numbers stat gives.
	for _, line := range strings.Split(strings.TrimSpace(must(t, run(t, dir, "ddfs", "ls", "-i", "d.img:/tree"), 0).stdout), "\n") {
		ino, name, _ := strings.Cut(strings.TrimSpace(line), " ")
		if statField(t, dir, "d.img:/tree/"+name, "ino") != ino {
			t.Errorf("ls -i: %q", line)
		}
	}
	// Long lines, numeric ids, UTC times: equal but for directory sizes.
	norm := func(s string) string {
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
			f := strings.Fields(line)
			if len(f) < 9 || f[0] == "total" {
				continue
			}
			if f[0][0] >= '0' && f[0][0] <= '9' {
				f = f[1:] // -i: inode numbers differ from the host's
			}
			if f[0][0] == 'd' {
				f[4] = "DIRSIZE"
			}
			out = append(out, strings.Join(f, " "))
		}
		return strings.Join(out, "\n")
	}
	for _, flags := range [][]string{{"-ln"}, {"-lnt"}, {"-lnS"}, {"-lnF"}, {"-lnh"}, {"-lna"}, {"-lnir"}} {
		want := norm(hostLs(append(flags, "tree/sub/deep", "tree")...))
		cmd := exec.Command(filepath.Join(binDir, "ddfs"), append([]string{"ls"}, append(flags, "d.img:/tree/sub/deep", "d.img:/tree")...)...)
		cmd.Dir, cmd.Env = dir, []string{"TZ=UTC"}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("ddfs ls %v: %v", flags, err)
		}
		got := norm(string(out))
		if flags[0] == "-lnS" { // directory sizes order -S differently
			got, want = noDir(got), noDir(want)
		}
		if got != want {
			t.Errorf("ls %v:\nddfs:\n%s\nGNU:\n%s", flags, got, want)
		}
	}
}

// TestLsQuotingAndJSON: a name with an escape sequence never reaches the
// output raw with shell-escape quoting (a terminal's default), is printed
// as it is when piped, and --json keeps a non-UTF-8 name exact.
func TestLsQuotingAndJSON(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	evil, binary := "x\x1b[31mred", "bin\xff\xfe"
	os.WriteFile(filepath.Join(dir, evil), []byte("1"), 0o644)
	os.WriteFile(filepath.Join(dir, binary), []byte("2"), 0o644)
	must(t, run(t, dir, "ddfs", "cp", "./"+evil, "./"+binary, "d.img:/"), 0)
	if got := must(t, run(t, dir, "ddfs", "ls", "d.img:/"), 0).stdout; got != binary+"\n"+evil+"\n" {
		t.Errorf("piped ls: %q", got)
	}
	q := must(t, run(t, dir, "ddfs", "ls", "--quoting-style=shell-escape", "d.img:/"), 0).stdout
	if strings.ContainsAny(q, "\x1b\xff") || q != `'bin'$'\377\376'`+"\n"+`'x'$'\033''[31mred'`+"\n" {
		t.Errorf("quoted ls: %q", q)
	}
	// A terminal gets the quoted form by default (script(1) gives ls a pty).
	if script, err := exec.LookPath("script"); err == nil {
		cmd := exec.Command(script, "-qec", filepath.Join(binDir, "ddfs")+" ls d.img:/", "/dev/null")
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("script: %v", err)
		}
		if strings.ContainsAny(string(out), "\x1b\xff") || !strings.Contains(string(out), `$'\033'`) {
			t.Errorf("ls on a terminal: %q", out)
		}
	}
	var ents []struct {
		Name json.RawMessage `json:"name"`
	}
	if err := json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "ls", "--json", "d.img:/"), 0).stdout), &ents); err != nil || len(ents) != 2 {
		t.Fatalf("ls --json: %v %d", err, len(ents))
	}
	if compact(ents[0].Name) != `{"base64":"Ymlu//4="}` || compact(ents[1].Name) != `"x\u001b[31mred"` {
		t.Errorf("ls --json names: %s %s", ents[0].Name, ents[1].Name)
	}
	// xattr values: getfattr's forms in text, exact bytes in JSON.
	must(t, run(t, dir, "ddfs", "xattr", "set", "d.img:/"+evil, "user.t", "hello \"q\""), 0)
	os.WriteFile(filepath.Join(dir, "v"), []byte{0, 1, 0xff}, 0o644)
	syscall.Setxattr(filepath.Join(dir, "v"), "user.b", []byte{0, 1, 0xff}, 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", "v", "d.img:/v"), 0)
	if got := must(t, run(t, dir, "ddfs", "xattr", "list", "d.img:/v"), 0).stdout; got != "user.b=0sAAH/\n" {
		t.Errorf("xattr list binary: %q", got)
	}
	if got := must(t, run(t, dir, "ddfs", "xattr", "list", "d.img:/"+evil), 0).stdout; got != `user.t="hello \"q\""`+"\n" {
		t.Errorf("xattr list text: %q", got)
	}
	if got := must(t, run(t, dir, "ddfs", "xattr", "list", "--json", "d.img:/v"), 0).stdout; strings.Join(strings.Fields(got), "") != `[{"name":"user.b","value":{"base64":"AAH/"}}]` {
		t.Errorf("xattr list --json: %s", got)
	}
}

// TestDuFlags: GNU du's units and selections on a tree of known sizes
// (the model: the sizes written, not what the image reports).
func TestDuFlags(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "tree")
	os.MkdirAll(filepath.Join(host, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(host, "f1"), make([]byte, 10000), 0o644) // zeros: a hole, 0 disk bytes
	data := func(n int) []byte { return []byte(strings.Repeat("x", n)) }
	os.WriteFile(filepath.Join(host, "a", "f2"), data(5000), 0o644)
	os.WriteFile(filepath.Join(host, "a", "b", "f3"), data(3000), 0o644)
	os.Link(filepath.Join(host, "a", "f2"), filepath.Join(host, "a", "b", "hard"))
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", "tree", "d.img:/"), 0)
	du := func(args ...string) string {
		return must(t, run(t, dir, "ddfs", append([]string{"du"}, args...)...), 0).stdout
	}
	// Directories add their own apparent size (stat's), as GNU du -b does.
	dsz := func(p string) int {
		var n int
		fmt.Sscan(statField(t, dir, "d.img:"+p, "size"), &n)
		return n
	}
	b, a, top := dsz("/tree/a/b"), dsz("/tree/a"), dsz("/tree")
	// The hard link's 5000 bytes count once: under whichever name du
	// meets first, so the lines are matched with either.
	withF2 := fmt.Sprintf("3000\td.img:/tree/a/b/f3\n%d\td.img:/tree/a/b\n5000\td.img:/tree/a/f2\n%d\td.img:/tree/a\n10000\td.img:/tree/f1\n%d\td.img:/tree\n%d\ttotal\n",
		3000+b, 8000+b+a, 18000+b+a+top, 18000+b+a+top)
	withHard := fmt.Sprintf("3000\td.img:/tree/a/b/f3\n5000\td.img:/tree/a/b/hard\n%d\td.img:/tree/a/b\n%d\td.img:/tree/a\n10000\td.img:/tree/f1\n%d\td.img:/tree\n%d\ttotal\n",
		8000+b, 8000+b+a, 18000+b+a+top, 18000+b+a+top)
	if got := du("-ab", "-c", "d.img:/tree"); !sameLines(got, withF2) && !sameLines(got, withHard) {
		t.Errorf("du -abc:\n%s\nwant (any order within a directory):\n%s\nor\n%s", got, withF2, withHard)
	}
	if got := du("-b", "-d", "1", "d.img:/tree"); !sameLines(got, fmt.Sprintf("%d\td.img:/tree/a\n%d\td.img:/tree\n", 8000+b+a, 18000+b+a+top)) {
		t.Errorf("du -b -d 1: %q", got)
	}
	if got := du("-sb", "d.img:/tree/a", "d.img:/tree/f1"); got != fmt.Sprintf("%d\td.img:/tree/a\n10000\td.img:/tree/f1\n", 8000+b+a) {
		t.Errorf("du -sb: %q", got)
	}
	app := 18000 + b + a + top
	// Disk usage in 1K blocks, rounded up: f1 is all hole, f2 and f3 take
	// at least their sectors.
	if got := du("-s", "--apparent-size", "d.img:/tree"); got != fmt.Sprintf("%d\td.img:/tree\n", (app+1023)/1024) {
		t.Errorf("du -s --apparent-size: %q (%d bytes)", got, app)
	}
	if got := du("-sh", "--apparent-size", "d.img:/tree"); got != "18K\td.img:/tree\n" {
		t.Errorf("du -sh --apparent-size: %q", got)
	}
	// Disk usage: f1 is all hole; f2 and f3 take at least their bytes.
	var blocks int
	fmt.Sscan(du("-s", "d.img:/tree"), &blocks)
	if blocks < 8 || blocks > 12 {
		t.Errorf("du -s: %d blocks for 8000 bytes of data", blocks)
	}
	var js []struct {
		Path        string
		Bytes, Size uint64
	}
	if err := json.Unmarshal([]byte(du("--json", "-s", "d.img:/tree")), &js); err != nil || len(js) != 1 || js[0].Size != uint64(app) || js[0].Path != "/tree" || js[0].Bytes < 8000 || js[0].Bytes > 12000 {
		t.Errorf("du --json: %+v %v", js, err)
	}
}

func compact(b []byte) string {
	var out bytes.Buffer
	json.Compact(&out, b)
	return out.String()
}

func sameLines(a, b string) bool {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(x) != len(y) {
		return false
	}
	seen := map[string]int{}
	for _, l := range x {
		seen[l]++
	}
	for _, l := range y {
		seen[l]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

// TestChmodChownTouch: symbolic modes and -R against GNU chmod on a host
// copy, owner names from the image's own /etc/passwd, symlink handling,
// and touch -d/-r/-a/-m against GNU touch.
func TestChmodChownTouch(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "tree")
	hostTree(t, host)
	os.Remove(filepath.Join(host, "fifo"))
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", "tree", "d.img:/"), 0)
	for _, spec := range []string{"-R u+rwX,go-w", "-R a=r,u+w", "-R go+X", "u+s,o+t"} {
		f := strings.Fields(spec)
		must(t, run(t, dir, "ddfs", append([]string{"chmod"}, append(f, "d.img:/tree")...)...), 0)
		cmd := exec.Command("chmod", append(f, "tree")...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("chmod %s: %v %s", spec, err, out)
		}
		for _, p := range []string{"tree", "tree/b.txt", "tree/zz exec", "tree/sub", "tree/sub/deep/y"} {
			var st syscall.Stat_t
			syscall.Lstat(filepath.Join(dir, p), &st)
			var s struct{ Mode string }
			json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "stat", "--json", "d.img:/"+p), 0).stdout), &s)
			if want := sprintfOctal(st.Mode & 0o7777); s.Mode != want {
				t.Errorf("chmod %s: %s is %s, GNU chmod made %s", spec, p, s.Mode, want)
			}
		}
	}
	// chmod of a symlink operand changes its target.
	must(t, run(t, dir, "ddfs", "chmod", "0600", "d.img:/tree/link"), 0)
	if m := statField(t, dir, "d.img:/tree/b.txt", "mode"); m != "0600" {
		t.Errorf("chmod through a link: target mode %s", m)
	}
	// Names from the image's /etc/passwd and /etc/group.
	must(t, run(t, dir, "ddfs", "mkdir", "d.img:/etc"), 0)
	os.WriteFile(filepath.Join(dir, "passwd"), []byte("root:x:0:0::/root:/bin/sh\nalice:x:1234:4321::/home/a:/bin/sh\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "group"), []byte("root:x:0:\nalices:x:4321:\nops:x:77:\n"), 0o644)
	must(t, run(t, dir, "ddfs", "cp", "passwd", "group", "d.img:/etc/"), 0)
	must(t, run(t, dir, "ddfs", "ln", "-s", "/tree/c", "d.img:/tree/sub/out"), 0)
	must(t, run(t, dir, "ddfs", "chown", "-R", "alice:", "d.img:/tree/sub"), 0)
	must(t, run(t, dir, "ddfs", "chown", "-h", ":ops", "d.img:/tree/link"), 0)
	for p, want := range map[string][2]string{"d.img:/tree/sub/deep/y": {"1234", "4321"}, "d.img:/tree/sub": {"1234", "4321"}, "d.img:/tree/link": {"0", "77"},
		"d.img:/tree/sub/out": {"1234", "4321"}, "d.img:/tree/c": {"0", "0"}} { // -R changes a link met below itself
		if u, g := statField(t, dir, p, "uid"), statField(t, dir, p, "gid"); u != want[0] || g != want[1] {
			t.Errorf("chown: %s is %s:%s, want %v", p, u, g, want)
		}
	}
	if got := must(t, run(t, dir, "ddfs", "ls", "-l", "d.img:/tree/sub/x"), 0).stdout; !strings.Contains(got, " alice alices ") {
		t.Errorf("ls -l names: %q", got)
	}
	if r := run(t, dir, "ddfs", "chown", "mallory", "d.img:/tree"); r.code == 0 || !strings.Contains(r.stderr, "mallory") {
		t.Errorf("unknown user: %d %q", r.code, r.stderr)
	}
	// touch -d / -t / -r / -m / -a against GNU touch on the host.
	for _, args := range [][]string{{"-d", "2021-03-04 05:06:07.5"}, {"-m", "-d", "@1600000000"}, {"-a", "-d", "2020-01-01T00:00:00Z"}, {"-r", "tree/sub/deep/y"},
		{"-t", "202107080910.11"}, {"-m", "-t", "6901020304"}, {"-a", "-t", "202412312359.60"}} {
		cmd := exec.Command("touch", append(args, "tree/c")...)
		cmd.Dir, cmd.Env = dir, []string{"TZ=Europe/Paris"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("touch %v: %v %s", args, err, out)
		}
		ours := exec.Command(filepath.Join(binDir, "ddfs"), append(append([]string{"touch"}, args...), "d.img:/tree/c")...)
		ours.Dir, ours.Env = dir, []string{"TZ=Europe/Paris"}
		if out, err := ours.CombinedOutput(); err != nil {
			t.Fatalf("ddfs touch %v: %v %s", args, err, out)
		}
		var st syscall.Stat_t
		syscall.Stat(filepath.Join(dir, "tree/c"), &st)
		wantM := time.Unix(st.Mtim.Sec, st.Mtim.Nsec).UTC().Format(time.RFC3339Nano)
		wantA := time.Unix(st.Atim.Sec, st.Atim.Nsec).UTC().Format(time.RFC3339Nano)
		if m, a := statField(t, dir, "d.img:/tree/c", "mtime"), statField(t, dir, "d.img:/tree/c", "atime"); m != wantM || a != wantA {
			t.Errorf("touch %v: mtime %s atime %s, GNU touch: %s %s", args, m, a, wantM, wantA)
		}
	}
	must(t, run(t, dir, "ddfs", "touch", "d.img:/tree/new"), 0)
	must(t, run(t, dir, "ddfs", "touch", "-c", "d.img:/tree/not-made"), 0)
	must(t, run(t, dir, "ddfs", "stat", "d.img:/tree/not-made"), 1)
	must(t, run(t, dir, "fsck.ddfs", "d.img"), 0)
}

func sprintfOctal(m uint32) string { return fmt.Sprintf("%04o", m) }

// TestChownKillsSetID: chown clears set-user-ID, set-group-ID where
// group-executable and the file capabilities of a non-directory, as
// chown(2) does on Linux (the model: the same steps on the host when
// root); a directory keeps its bits.
func TestChownKillsSetID(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "d.img"), 0)
	host := t.TempDir()
	for _, c := range []struct {
		name, mode, want string
		dir              bool
	}{
		{"suid", "6755", "0755", false},
		{"sgid-no-gx", "2745", "2745", false},
		{"dir", "6755", "6755", true},
	} {
		mk := "touch"
		if c.dir {
			mk = "mkdir"
		}
		p := "d.img:/" + c.name
		must(t, run(t, dir, "ddfs", mk, p), 0)
		must(t, run(t, dir, "ddfs", "chmod", c.mode, p), 0)
		must(t, run(t, dir, "ddfs", "xattr", "set", p, "security.capability", "0x0100000200200000"), 0)
		must(t, run(t, dir, "ddfs", "chown", "1:1", p), 0)
		if m := statField(t, dir, p, "mode"); m != c.want {
			t.Errorf("%s: chown left %s from %s, want %s", c.name, m, c.mode, c.want)
		}
		caps := run(t, dir, "ddfs", "xattr", "get", p, "security.capability")
		if kept := caps.code == 0; kept != c.dir {
			t.Errorf("%s: capabilities kept %v, want %v (%q)", c.name, kept, c.dir, caps.stderr)
		}
		if os.Geteuid() != 0 {
			continue
		}
		hp := filepath.Join(host, c.name)
		if c.dir {
			os.Mkdir(hp, 0o755)
		} else {
			os.WriteFile(hp, nil, 0o644)
		}
		mode, _ := strconv.ParseUint(c.mode, 8, 32)
		var st syscall.Stat_t
		if err := syscall.Chmod(hp, uint32(mode)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(hp, 1, 1); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Stat(hp, &st); err != nil {
			t.Fatal(err)
		}
		if want := sprintfOctal(st.Mode & 0o7777); want != c.want {
			t.Errorf("%s: the host's chown left %s, the model says %s", c.name, want, c.want)
		}
	}
}

// statField is one key of ddfs stat --json, as text.
func statField(t *testing.T, dir, p, key string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "stat", "--json", p), 0).stdout), &m); err != nil {
		t.Fatal(err)
	}
	switch v := m[key].(type) {
	case string:
		return v
	case float64:
		return fmt.Sprint(int64(v))
	}
	return ""
}

// TestErrorForms: errors are one line "ddfs: CMD: IMAGE:PATH: Reason" as
// coreutils words them, and a trailing slash on a file is ENOTDIR.
func TestErrorForms(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "d.img:/d"), 0)
	must(t, run(t, dir, "ddfs", "touch", "d.img:/f"), 0)
	must(t, run(t, dir, "ddfs", "ln", "-s", "d", "d.img:/l"), 0)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"cat", "d.img:/f/"}, "ddfs: cat: d.img:/f/: Not a directory\n"},
		{[]string{"mkdir", "d.img:/d"}, "ddfs: mkdir: d.img:/d: File exists\n"},
		{[]string{"mv", "d.img:/d", "d.img:/d/x"}, "ddfs: mv: d.img:/d: Invalid argument\n"},
		{[]string{"mv", "d.img:/nope", "d.img:/x"}, "ddfs: mv: d.img:/nope: No such file or directory\n"},
		{[]string{"ln", "-s", "x", "d.img:/f"}, "ddfs: ln: d.img:/f: File exists\n"},
		{[]string{"ls", "d.img:/f/"}, "ddfs: ls: d.img:/f/: Not a directory\n"},
	} {
		if r := run(t, dir, "ddfs", c.args...); r.code != 1 || r.stderr != c.want {
			t.Errorf("ddfs %v: exit %d, stderr %q, want %q", c.args, r.code, r.stderr, c.want)
		}
	}
	// A trailing slash follows a symlink to a directory.
	must(t, run(t, dir, "ddfs", "ls", "d.img:/l/"), 0)
	// Each path said once, in coreutils' words; a missing image is ENOENT.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"fsck.ddfs", "x.img"}, 8, "fsck.ddfs: x.img: No such file or directory\n"},
		{[]string{"fsck.ddfs", "x.img", "d.img"}, 8, "fsck.ddfs: x.img: No such file or directory\n"},
		{[]string{"trimtool", "x.img"}, 1, "trimtool: x.img: No such file or directory\n"},
		{[]string{"ddfs", "info", "x.img", "d.img"}, 1, "ddfs: info: x.img: No such file or directory\n"},
		{[]string{"ddfs", "ls", "no.img:/"}, 1, "ddfs: ls: no.img: No such file or directory\n"},
		{[]string{"ddfs", "cat", "no.img:/f"}, 1, "ddfs: cat: no.img: No such file or directory\n"},
		{[]string{"ddfs", "ln", "-s", "x", "no.img:/f"}, 1, "ddfs: ln: no.img: No such file or directory\n"},
		{[]string{"ddfs", "cp", "d.img:/d", "out"}, 1, "ddfs: cp: -r not specified; omitting directory 'd.img:/d'\n"},
		{[]string{"ddfs", "cp", "d.img:/d", "d.img:/y"}, 1, "ddfs: cp: -r not specified; omitting directory 'd.img:/d'\n"},
		{[]string{"ddfs", "cp", "hostdir", "d.img:/"}, 1, "ddfs: cp: -r not specified; omitting directory 'hostdir'\n"},
		{[]string{"trimtool", "-o", "1T", "d.img"}, 1, "trimtool: d.img: offset 1099511627776 is past the end of every device (the largest has 268435456 bytes): invalid argument\n"},
	} {
		os.Mkdir(filepath.Join(dir, "hostdir"), 0o755)
		r := run(t, dir, c.args[0], c.args[1:]...)
		if r.code != c.code || !strings.HasPrefix(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %d and %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}
	r := run(t, dir, "fsck.ddfs", "--json", "x.img", "d.img")
	if l := jsonLines(t, r.stdout); len(l) != 2 || l[0].Error != "No such file or directory" {
		t.Errorf("fsck --json x.img d.img: %s", r.stdout)
	}
}

// TestTrailingSlash: a trailing slash names a directory, so on a file it
// is refused by cp, mv and ln in every direction (into, out of and
// inside an image, on either operand) with GNU's errno: ENOTDIR, and for
// ln's new name ENOENT or EEXIST. Nothing is made or replaced; on a
// directory the slash still works.
func TestTrailingSlash(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	os.WriteFile(filepath.Join(dir, "f"), []byte("f\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "e"), []byte("e\n"), 0o644)
	must(t, run(t, dir, "ddfs", "cp", "f", "e", "d.img:/"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "d.img:/dir"), 0)
	const notDir, noEnt, exists = "Not a directory", "No such file or directory", "File exists"
	for _, c := range []struct {
		args        []string
		named, errs string
	}{
		{[]string{"cp", "d.img:/f/", "d.img:/x"}, "d.img:/f/", notDir},
		{[]string{"cp", "d.img:/f", "d.img:/n/"}, "d.img:/n/", notDir},
		{[]string{"cp", "d.img:/f", "d.img:/e/"}, "d.img:/e/", notDir},
		{[]string{"cp", "f/", "d.img:/x"}, "f/", notDir},
		{[]string{"cp", "f", "d.img:/n/"}, "d.img:/n/", notDir},
		{[]string{"cp", "d.img:/f/", "x"}, "d.img:/f/", notDir},
		{[]string{"cp", "d.img:/f", "n/"}, "n/", notDir},
		{[]string{"cp", "d.img:/f", "e/"}, "e/", notDir},
		{[]string{"cp", "-r", "d.img:/dir", "e/"}, "e/", notDir},
		{[]string{"cp", "-", "d.img:/n/"}, "d.img:/n/", notDir},
		{[]string{"mv", "d.img:/f/", "d.img:/x"}, "d.img:/f/", notDir},
		{[]string{"mv", "d.img:/f", "d.img:/n/"}, "d.img:/n/", notDir},
		{[]string{"mv", "d.img:/f", "d.img:/e/"}, "d.img:/e/", notDir},
		{[]string{"ln", "d.img:/f/", "d.img:/x"}, "d.img:/f/", notDir},
		{[]string{"ln", "d.img:/f", "d.img:/n/"}, "d.img:/n/", noEnt},
		{[]string{"ln", "d.img:/f", "d.img:/e/"}, "d.img:/e/", exists},
		{[]string{"ln", "-s", "f", "d.img:/n/"}, "d.img:/n/", noEnt},
		{[]string{"ln", "-s", "f", "d.img:/e/"}, "d.img:/e/", exists},
	} {
		want := "ddfs: " + c.args[0] + ": " + c.named + ": " + c.errs + "\n"
		if r := run(t, dir, "ddfs", c.args...); r.code != 1 || r.stderr != want {
			t.Errorf("ddfs %v: exit %d, stderr %q, want %q", c.args, r.code, r.stderr, want)
		}
		if ls := must(t, run(t, dir, "ddfs", "ls", "d.img:/"), 0); ls.stdout != "dir\ne\nf\n" {
			t.Fatalf("after ddfs %v: / holds %q", c.args, ls.stdout)
		}
		if e := must(t, run(t, dir, "ddfs", "cat", "d.img:/e"), 0); e.stdout != "e\n" {
			t.Fatalf("after ddfs %v: /e holds %q", c.args, e.stdout)
		}
		for _, h := range []string{"n", "x"} {
			if _, err := os.Lstat(filepath.Join(dir, h)); err == nil {
				t.Fatalf("after ddfs %v: host %s was made", c.args, h)
			}
		}
	}
	// On a directory the slash is no obstacle, in each direction.
	must(t, run(t, dir, "ddfs", "cp", "-r", "d.img:/dir/", "d.img:/n/"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-r", "d.img:/dir", "out/"), 0)
	if st, err := os.Stat(filepath.Join(dir, "out")); err != nil || !st.IsDir() {
		t.Fatalf("cp -r d.img:/dir out/: %v", err)
	}
	must(t, run(t, dir, "ddfs", "mv", "d.img:/n/", "d.img:/m/"), 0)
	must(t, run(t, dir, "ddfs", "ls", "d.img:/m/"), 0) // a directory
}

// TestLsColumns: ls -C (and ls on a terminal) lays out names exactly as
// GNU ls -C does: the same bytes, tabs included, for four directories at
// every width from 1 to 90 ($COLUMNS when piped, the terminal's width on
// a pty); -1 is one per line there; on a terminal, unquoted names get a
// space to line up with quoted ones, in columns and in -l.
func TestLsColumns(t *testing.T) {
	gnu, err := exec.LookPath("ls")
	if err != nil {
		t.Skip("no ls(1)")
	}
	dir := t.TempDir()
	hostTree(t, filepath.Join(dir, "t", "tree"))
	os.MkdirAll(filepath.Join(dir, "t", "one"), 0o755)
	os.WriteFile(filepath.Join(dir, "t", "one", "only"), nil, 0o644)
	os.MkdirAll(filepath.Join(dir, "t", "many"), 0o755)
	for i := 0; i < 157; i++ { // names of 1 to 23 bytes, in no order of length
		os.WriteFile(filepath.Join(dir, "t", "many", fmt.Sprintf("%0*d", 1+i*7%23, i)), nil, 0o644)
	}
	os.MkdirAll(filepath.Join(dir, "t", "quoted"), 0o755)
	for _, n := range []string{"it's", "a b", "plain", "x$y", "tab\tx", "m#h", "zz"} {
		os.WriteFile(filepath.Join(dir, "t", "quoted", n), nil, 0o644)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-r", "t", "d.img"), 0)
	ls := func(name string, width int, args ...string) string {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = []string{"LC_ALL=C", fmt.Sprintf("COLUMNS=%d", width)}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		return string(out)
	}
	for _, d := range []string{"tree", "one", "many", "quoted"} {
		for w := 1; w <= 90; w++ {
			for _, flags := range []string{"-C", "-CF"} {
				want := ls(gnu, w, flags, "t/"+d)
				if got := ls(filepath.Join(binDir, "ddfs"), w, "ls", flags, "d.img:/"+d); got != want {
					t.Fatalf("COLUMNS=%d ls %s %s:\n%q\nGNU:\n%q", w, flags, d, got, want)
				}
			}
		}
	}
	// -w overrides $COLUMNS; -w 0 is no limit (GNU: one line, no tabs).
	for _, d := range []string{"tree", "many"} {
		for _, w := range []string{"0", "7", "33", "120"} {
			want := ls(gnu, 20, "-C", "-w", w, "t/"+d)
			if got := ls(filepath.Join(binDir, "ddfs"), 20, "ls", "-C", "-w", w, "d.img:/"+d); got != want {
				t.Fatalf("ls -C -w %s %s:\n%q\nGNU:\n%q", w, d, got, want)
			}
		}
	}
	// On a terminal: its width, quoting with alignment, -1 and -l.
	// -l: the names after the time (owners and times differ by design).
	names := regexp.MustCompile(`(?m)^.*\d\d:\d\d `)
	for _, line := range []string{"stty cols 57; %s t/many", "stty cols 31; %s t/quoted", "stty cols 80; %s -1 t/tree", "%s -l t/quoted"} {
		want := names.ReplaceAllString(onTerminal(t, dir, "LC_ALL=C "+fmt.Sprintf(line, gnu)), "")
		got := names.ReplaceAllString(onTerminal(t, dir, strings.ReplaceAll(fmt.Sprintf(line, "ddfs ls"), "t/", "d.img:/")), "")
		if got != want || strings.Count(want, "\n") < 3 {
			t.Errorf("%s on a terminal:\n%q\nGNU:\n%q", line, got, want)
		}
	}
}

// TestLsHumanTotal: ls -lh says its total in -h units as GNU ls does
// ("total 2.1M", what numfmt --to=iec says of the bytes), not in 1K blocks.
func TestLsHumanTotal(t *testing.T) {
	numfmt, err := exec.LookPath("numfmt")
	if err != nil {
		t.Skip("no numfmt(1)")
	}
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "in"), 0o755)
	for i, n := range []int{700 << 10, 1 << 20, 333 << 10} {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(j*31 + j>>8*17 + i) // not all one byte, nothing to dedupe across files
		}
		os.WriteFile(filepath.Join(dir, "in", fmt.Sprint(i)), b, 0o644)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "--compress", "none", "-r", "in", "d.img"), 0)
	first := func(s string) string { return strings.SplitN(s, "\n", 2)[0] }
	var kib uint64
	if _, err := fmt.Sscanf(first(must(t, run(t, dir, "ddfs", "ls", "-l", "d.img:/"), 0).stdout), "total %d", &kib); err != nil || kib < 1024 {
		t.Fatalf("ls -l total: %v (%d KiB)", err, kib)
	}
	out, err := exec.Command(numfmt, "--to=iec", fmt.Sprint(kib*1024)).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "total " + strings.TrimSpace(string(out))
	if got := first(must(t, run(t, dir, "ddfs", "ls", "-lh", "d.img:/"), 0).stdout); got != want {
		t.Errorf("ls -lh: %q, want %q", got, want)
	}
}

// TestXattrSetEncodings: xattr set reads a value as setfattr -v does
// (0x hex, 0s base64, "..." with escapes, else as given), so every value
// xattr list prints sets the same bytes back.
func TestXattrSetEncodings(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	must(t, run(t, dir, "ddfs", "touch", "d.img:/f"), 0)
	get := func(name string) string {
		v := must(t, run(t, dir, "ddfs", "xattr", "get", "d.img:/f", name), 0).stdout
		if utf8.ValidString(v) {
			v = strings.TrimSuffix(v, "\n") // get ends a text value with a newline
		}
		return v
	}
	for arg, want := range map[string]string{
		"0x0001ff": "\x00\x01\xff", "0XAbCd": "\xab\xcd", "0sAAH/": "\x00\x01\xff", "0SaGk=": "hi", "plain": "plain",
		`"it's \"q\" \\ \001"`: "it's \"q\" \\ \x01", `"`: `"`, "0": "0", "0x": "", `x"y"`: `x"y"`,
	} {
		must(t, run(t, dir, "ddfs", "xattr", "set", "d.img:/f", "user.v", arg), 0)
		if arg == "0x" {
			continue // an empty value: get has nothing to print
		}
		if got := get("user.v"); got != want {
			t.Errorf("set %q: value %q, want %q", arg, got, want)
		}
		// What list prints for it sets the same bytes back.
		line := strings.TrimSpace(must(t, run(t, dir, "ddfs", "xattr", "list", "d.img:/f"), 0).stdout)
		must(t, run(t, dir, "ddfs", "xattr", "set", "d.img:/f", "user.w", strings.TrimPrefix(line, "user.v=")), 0)
		if got := get("user.w"); got != want {
			t.Errorf("set %q, then list's %q back: %q, want %q", arg, line, got, want)
		}
		must(t, run(t, dir, "ddfs", "xattr", "rm", "d.img:/f", "user.w"), 0)
	}
	for _, bad := range []string{"0xzz", "0x123", "0S aGk=", `"bad \q"`} {
		must(t, run(t, dir, "ddfs", "xattr", "set", "d.img:/f", "user.v", bad), 2)
	}
}
