package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// timeTree makes src/ with files whose mtimes and atimes lie at set ages
// before now (halfway inside GNU find's day and minute windows), a
// setuid file, a symlink and a directory, and sets the times again.
func timeTree(t *testing.T, src string, now time.Time) func() {
	t.Helper()
	ages := map[string]time.Duration{ // mtime age; the atime is at half of it
		"f0": 30*time.Minute + 30*time.Second, "f1": 25 * time.Hour, "f2": 50 * time.Hour, "f3": 84 * time.Hour,
		"f9": 9*24*time.Hour + 5*time.Hour, "m90": 90*time.Minute + 30*time.Second, "sub/x": 2*time.Hour + 30*time.Second,
	}
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for n := range ages {
		if err := os.WriteFile(filepath.Join(src, n), []byte(n+" data\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(src, "f9"), os.ModeSetuid|0o755)
	if err := os.Symlink("f0", filepath.Join(src, "lnk")); err != nil {
		t.Fatal(err)
	}
	set := func() {
		for n, age := range ages {
			m := now.Add(-age).Add(123456789 * time.Nanosecond)
			if err := os.Chtimes(filepath.Join(src, n), now.Add(-age/2), m); err != nil {
				t.Fatal(err)
			}
		}
	}
	set()
	return set
}

// TestFindTimesLikeGNU: -mtime, -mmin, -atime, -amin, -ctime, -cmin,
// -newer, -newerXY and -printf give what GNU find gives on the host tree
// copied in with cp -a. Each comparison is GNU, ddfs, GNU: when the two
// GNU runs agree no window edge passed during the ddfs run (each file
// enters or leaves a window at most once in well under a minute), so a
// loaded machine retries instead of failing. Atime tests look at files
// only: GNU find's readdir moves a directory's atime.
func TestFindTimesLikeGNU(t *testing.T) {
	if _, err := exec.LookPath("find"); err != nil {
		t.Skip("no find on the host")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	now := time.Now()
	reset := timeTree(t, src, now)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", "src", "d.img:/"), 0)
	reset() // cp -a read the files: their host atimes may have moved
	// %u names owners from the image's /etc/passwd, GNU's from the host's.
	if u, err := user.LookupId(fmt.Sprint(os.Getuid())); err == nil {
		pw := fmt.Sprintf("%s:x:%d:%d::/:/bin/sh\n", u.Username, os.Getuid(), os.Getgid())
		must(t, runIn(t, dir, []byte(pw), "ddfs", "cp", "-", "d.img:/passwd"), 0)
		must(t, run(t, dir, "ddfs", "mkdir", "d.img:/etc"), 0)
		must(t, run(t, dir, "ddfs", "mv", "d.img:/passwd", "d.img:/etc/"), 0)
	}
	at := func(age time.Duration) string { return fmt.Sprintf("@%d", now.Add(-age).Unix()) }
	for _, q := range [][]string{
		{"-mtime", "0"}, {"-mtime", "1"}, {"-mtime", "2"}, {"-mtime", "3"}, {"-mtime", "+1"}, {"-mtime", "+0"}, {"-mtime", "-2"}, {"-mtime", "-1"},
		{"-mtime", "+9"}, {"-mtime", "+8"}, {"-mtime", "1.5"},
		{"-mmin", "31"}, {"-mmin", "30"}, {"-mmin", "-60"}, {"-mmin", "+60"}, {"-mmin", "91"}, {"-mmin", "-121"}, {"-mmin", "+120"},
		{"-type", "f", "-atime", "0"}, {"-type", "f", "-atime", "1"}, {"-type", "f", "-atime", "+1"}, {"-type", "f", "-atime", "-2"},
		{"-type", "f", "-amin", "-20"}, {"-type", "f", "-amin", "+40"}, {"-type", "f", "-amin", "46"},
		{"-cmin", "-10"}, {"-cmin", "+10"}, {"-ctime", "0"}, {"-ctime", "+0"}, {"-ctime", "-1"},
		{"-newer", "src/f2"}, {"-newermt", at(40 * time.Hour)}, {"-newermt", at(100 * 24 * time.Hour)}, {"-type", "f", "-newerat", at(13 * time.Hour)},
		{"-newercm", "src/f1"}, {"-type", "f", "-neweram", "src/f1"}, {"!", "-newer", "src/f9"},
		{"-type", "f", "-printf", `%p %s %m %u %T@\n`}, {"-type", "l", "-printf", `%p|%s|%m|%T@\n`},
		{"-type", "d", "-printf", `%p %m %u\n`}, {"-printf", `%p\t100%%\0`}, {"-name", "f*", "-printf", "x", "-print"},
	} {
		compareFindGNU(t, dir, q)
	}
}

// compareFindGNU runs GNU find on dir/src and ddfs find on d.img:/src
// with expression q (a src/REF argument becomes d.img:/src/REF) and wants
// the same records, sorted.
func compareFindGNU(t *testing.T, dir string, q []string) {
	t.Helper()
	mine := append([]string{"find", "d.img:/src"}, q...)
	for i, a := range q {
		if strings.HasPrefix(a, "src/") {
			mine[2+i] = "d.img:/" + a
		}
	}
	sep := "\n"
	if strings.Contains(strings.Join(q, " "), `\0`) {
		sep = "\x00"
	}
	records := func(s string) string {
		l := strings.Split(strings.TrimSuffix(s, sep), sep)
		sort.Strings(l)
		return strings.Join(l, "|")
	}
	gnu := func() string {
		host := exec.Command("find", append([]string{filepath.Join(dir, "src")}, q...)...)
		host.Dir = dir
		out, err := host.Output()
		if err != nil {
			t.Fatalf("host find %v: %v", q, err)
		}
		return records(strings.ReplaceAll(string(out), dir, ""))
	}
	var got, want string
	for try := 0; try < 5; try++ {
		before := gnu()
		got = records(must(t, run(t, dir, "ddfs", mine...), 0).stdout)
		if want = gnu(); want == before {
			break
		}
	}
	if got != want {
		t.Errorf("find %q:\n got %q\nwant %q", q, got, want)
	}
}

// TestFindPrintfRefuses: -printf refuses what it does not know, and the
// time tests refuse a malformed N, each with a usage error naming it.
func TestFindPrintfRefuses(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	for q, want := range map[string]string{
		`-printf %Q`:      `-printf: unknown directive '%Q' (known: %p %s %m %u %T@ %%)`,
		`-printf %Tk`:     `-printf: unknown directive '%Tk' (known: %p %s %m %u %T@ %%)`,
		`-printf %10s`:    `-printf: unknown directive '%1' (known: %p %s %m %u %T@ %%)`,
		`-printf a\q`:     `-printf: unknown escape '\q' (known: \n \t \0 \\)`,
		`-printf x%`:      `-printf: '%' at the end of the format`,
		`-mtime 1x`:       `-mtime: want [+-]N, not '1x'`,
		`-amin ++1`:       `-amin: want [+-]N, not '++1'`,
		`-newermt bogus`:  `-newermt: `,
		`-newerxm /x`:     `unknown predicate '-newerxm'`,
		`-mmin`:           `missing argument to '-mmin'`,
		`-printf`:         `missing argument to '-printf'`,
		`-newer no:such:`: `no:such:`,
	} {
		r := must(t, run(t, dir, "ddfs", append([]string{"find", "d.img:/"}, strings.Fields(q)...)...), map[bool]int{true: 1, false: 2}[strings.HasPrefix(q, "-newer no")])
		if !strings.HasPrefix(r.stderr, "ddfs: find: ") || !strings.Contains(r.stderr, want) || r.stdout != "" {
			t.Errorf("find %s: exit %d %q, want %q", q, r.code, r.stderr, want)
		}
	}
}
