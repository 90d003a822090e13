package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/pkg/cli"
)

// TestVersionEveryTool: --version and -V (as mke2fs, e2fsck and fstrim)
// on every tool print "TOOL RELEASE..." and exit 0.
func TestVersionEveryTool(t *testing.T) {
	dir := t.TempDir()
	var cases [][]string
	for _, tool := range []string{"ddfs", "mkfs.ddfs", "fsck.ddfs", "trimtool", "dedupe-tool"} {
		cases = append(cases, []string{tool, "--version"}, []string{tool, "-V"})
	}
	for _, c := range cases {
		r := must(t, run(t, dir, c[0], c[1:]...), 0)
		if !strings.HasPrefix(r.stdout, c[0]+" "+cli.Release) || strings.Count(r.stdout, "\n") != 1 {
			t.Errorf("%v: %q", c, r.stdout)
		}
	}
}

// TestCommandLine: help of the right command, suggestions, usage exit
// codes per tool, -h as GNU tools take it, a bare image as its root, and
// device usage -b as bytes.
func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "d.img:/x"), 0)
	same := func(a, b []string) {
		t.Helper()
		ra, rb := must(t, run(t, dir, a[0], a[1:]...), 0), must(t, run(t, dir, b[0], b[1:]...), 0)
		if ra.stdout != rb.stdout || ra.stdout == "" {
			t.Errorf("%v and %v differ: %q, %q", a, b, ra.stdout, rb.stdout)
		}
	}
	differ := func(a, b []string) {
		t.Helper()
		ra, rb := must(t, run(t, dir, a[0], a[1:]...), 0), must(t, run(t, dir, b[0], b[1:]...), 0)
		if ra.stdout == rb.stdout {
			t.Errorf("%v and %v print the same: %q", a, b, ra.stdout)
		}
	}
	same([]string{"ddfs", "help", "cp"}, []string{"ddfs", "cp", "--help"})
	differ([]string{"ddfs", "help", "cp"}, []string{"ddfs", "--help"})
	differ([]string{"ddfs", "device", "usage", "--help"}, []string{"ddfs", "device", "--help"})
	same([]string{"ddfs", "ls", "d.img"}, []string{"ddfs", "ls", "d.img:/"})
	same([]string{"ddfs", "df", "-h", "d.img"}, []string{"ddfs", "df", "d.img"})
	same([]string{"ddfs", "device", "usage", "-h", "d.img"}, []string{"ddfs", "device", "usage", "d.img"})
	same([]string{"ddfs", "device", "help", "usage"}, []string{"ddfs", "device", "usage", "--help"})
	same([]string{"ddfs", "inspect", "help", "map"}, []string{"ddfs", "inspect", "map", "--help"})
	for verb, near := range map[string]string{"prop sett d.img label x": "set", "xattr lst d.img:/x": "list"} {
		args := strings.Fields(verb)
		if r := run(t, dir, "ddfs", args...); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "(did you mean '"+near+"'?)\n") {
			t.Errorf("ddfs %s: exit %d, stderr %q; want a usage error suggesting %s", verb, r.code, r.stderr, near)
		}
	}
	differ([]string{"ddfs", "ls", "-lh", "d.img"}, []string{"ddfs", "ls", "--help"})
	differ([]string{"ddfs", "du", "-h", "d.img:/"}, []string{"ddfs", "du", "--help"})
	for _, c := range []string{"chown", "chmod", "touch"} {
		// -h is no-dereference there (GNU), never help.
		if r, h := run(t, dir, "ddfs", c, "-h"), run(t, dir, "ddfs", c, "--help"); r.stdout == h.stdout {
			t.Errorf("ddfs %s -h prints the help", c)
		}
	}
	for _, c := range [][]string{
		{"ddfs", "lss", "d.img"}, {"ddfs", "cpy", "a", "b"}, {"ddfs"}, {"ddfs", "device"}, {"ddfs", "device", "usag", "d.img"},
		{"ddfs", "cp", "--bogus"}, {"mkfs.ddfs"}, {"mkfs.ddfs", "--stats=xml", "x.img"}, {"trimtool"},
		{"dedupe-tool", "sttaus", "d.img"}, {"dedupe-tool"}, {"trimtool", "policy"},
	} {
		if r := run(t, dir, c[0], c[1:]...); r.code != cli.ExitUsage || strings.Count(r.stderr, "Try '") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want a usage error (2)", c, r.code, r.stderr)
		}
	}
	must(t, run(t, dir, "fsck.ddfs"), 16)
	must(t, run(t, dir, "fsck.ddfs", "--bogus", "d.img"), 16)

	var usage []struct {
		Size uint64 `json:"size"`
	}
	if err := json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "device", "usage", "--json", "d.img"), 0).stdout), &usage); err != nil || len(usage) != 1 {
		t.Fatalf("device usage --json: %v", err)
	}
	r := must(t, run(t, dir, "ddfs", "device", "usage", "-b", "d.img"), 0)
	if want := fmt.Sprintf(": size %d, ", usage[0].Size); !strings.Contains(r.stdout, want) {
		t.Errorf("device usage -b: %q lacks %q", r.stdout, want)
	}
}

// TestCatStdin: "-" is stdin in ddfs cat, as in GNU cat: alone, and
// between image files in operand order.
func TestCatStdin(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "d.img"), 0)
	must(t, runIn(t, dir, []byte("file\n"), "ddfs", "cp", "-", "d.img:/f"), 0)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-"}, "in\n"},
		{[]string{"-", "d.img:/f"}, "in\nfile\n"},
		{[]string{"d.img:/f", "-", "d.img:/f"}, "file\nin\nfile\n"},
		{[]string{"d.img:/f", "-", "-"}, "file\nin\n"}, // stdin is at its end the second time
		{[]string{"-", "d.img:/f*"}, "in\nfile\n"},
	} {
		if r := must(t, runIn(t, dir, []byte("in\n"), "ddfs", append([]string{"cat"}, c.args...)...), 0); r.stdout != c.want {
			t.Errorf("cat %v: %q, want %q", c.args, r.stdout, c.want)
		}
	}
}

// TestSizeFlags: a size of 0 where a size must be given is refused, not
// taken as no size, and a size past int64 is refused as too large on
// every tool (it was wrapped: "-9223372036854775808 must be positive").
func TestSizeFlags(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "d.img"), 0)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mkfs.ddfs", "-q", "-b", "0", "z.img"}, `-b: size "0" must be positive`},
		{[]string{"mkfs.ddfs", "-q", "-b", "8E", "z.img"}, `-b: size "8E" is too large`},
		{[]string{"mkfs.ddfs", "-q", "-b", "9E", "z.img"}, `-b: size "9E" is too large`},
		{[]string{"mkfs.ddfs", "-q", "-b", "128M", "z.img:bandwidth=16E"}, `size "16E" is too large`},
		{[]string{"mkfs.ddfs", "-q", "-b", "128M", "--small-data-max", "8E", "z.img"}, `size "8E" is too large`},
		{[]string{"ddfs", "device", "resize", "d.img", "1", "8E"}, `size "8E" is too large`},
		{[]string{"ddfs", "device", "add", "-b", "8E", "d.img", "z.img"}, `-b: size "8E" is too large`},
		{[]string{"ddfs", "device", "add", "-b", "0", "d.img", "z.img"}, `-b: size "0" must be positive`},
		{[]string{"trimtool", "-o", "8E", "d.img"}, `-o: size "8E" is too large`},
		{[]string{"trimtool", "-l", "9223372036854775808", "d.img"}, `-l: size "9223372036854775808" is too large`},
		{[]string{"dedupe-tool", "estimate", "--memory", "8E", "d.img"}, `--memory: size "8E" is too large`},
		{[]string{"dedupe-tool", "run", "--min-size", "8E", "d.img"}, `--min-size: size "8E" is too large`},
	} {
		r := run(t, dir, c.args[0], c.args[1:]...)
		if r.code != cli.ExitUsage || !strings.HasPrefix(r.stderr, c.args[0]+": ") || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want a usage error saying %s", c.args, r.code, r.stderr, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "z.img")); !os.IsNotExist(err) {
		t.Errorf("a refused size left z.img: %v", err)
	}
}

// TestStatsJSONEveryTool: --stats=json prints one JSON object on stderr
// with the I/O of every device, the same keys on every tool.
func TestStatsJSONEveryTool(t *testing.T) {
	dir := t.TempDir()
	for _, c := range [][]string{
		{"mkfs.ddfs", "-q", "-b", "128M", "-d", "raid1", "-m", "raid1", "a.img", "b.img"},
		{"ddfs", "mkdir", "a.img:/d"},
		{"ddfs", "ls", "a.img:/"},
		{"fsck.ddfs", "-q", "a.img"},
		{"trimtool", "a.img"},
		{"trimtool", "policy", "a.img"},
		{"dedupe-tool", "enable", "a.img"},
		{"dedupe-tool", "status", "a.img"},
		{"dedupe-tool", "run", "-q", "a.img"},
	} {
		r := must(t, run(t, dir, c[0], append(c[1:len(c)-1:len(c)-1], "--stats=json", c[len(c)-1])...), 0)
		var out struct {
			IO []struct {
				DevID uint64 `json:"devid"`
			} `json:"io"`
			Fallbacks *int            `json:"fallback_chunks"`
			Heal      json.RawMessage `json:"heal"`
		}
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &out); err != nil || len(out.IO) != 2 || out.Fallbacks == nil || out.Heal == nil {
			t.Errorf("%v --stats=json: %v, %+v in %q", c, err, out, r.stderr)
		}
	}
}

// TestTrimtoolLikeFstrim: quiet unless -v, -n is --dry-run and changes
// nothing, -o past the end of every device fails (EINVAL, exit 1).
func TestTrimtoolLikeFstrim(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "t.img"), 0)
	if err := os.WriteFile(filepath.Join(dir, "f"), bytes.Repeat([]byte("data"), 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "ddfs", "cp", "f", "t.img:/f"), 0)
	must(t, run(t, dir, "ddfs", "rm", "t.img:/f"), 0)
	before := allocated(t, dir+"/t.img")
	if r := must(t, run(t, dir, "trimtool", "-n", "t.img"), 0); r.stdout != "" || allocated(t, dir+"/t.img") != before {
		t.Errorf("-n: printed %q or changed the image", r.stdout)
	}
	var dry struct {
		DryRun  bool `json:"dry_run"`
		Devices []struct {
			Bytes uint64 `json:"bytes"`
		} `json:"devices"`
	}
	json.Unmarshal([]byte(must(t, run(t, dir, "trimtool", "-n", "--json", "t.img"), 0).stdout), &dry)
	if !dry.DryRun || len(dry.Devices) != 1 || dry.Devices[0].Bytes == 0 {
		t.Errorf("-n --json: %+v", dry)
	}
	if r := must(t, run(t, dir, "trimtool", "-n", "-v", "t.img"), 0); !strings.Contains(r.stdout, fmt.Sprintf("(%d bytes)", dry.Devices[0].Bytes)) {
		t.Errorf("-n -v: %q", r.stdout)
	}
	if r := must(t, run(t, dir, "trimtool", "t.img"), 0); r.stdout != "" || allocated(t, dir+"/t.img") >= before {
		t.Errorf("trim: printed %q, allocated %d -> %d", r.stdout, before, allocated(t, dir+"/t.img"))
	}
	must(t, run(t, dir, "trimtool", "-o", "1G", "t.img"), 1)
	must(t, run(t, dir, "trimtool", "-o", "64M", "t.img"), 0)
}
