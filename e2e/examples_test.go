package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// The examples of every --help and of the README must work as written:
// these tests run each one in a fresh copy of a fixture that has the
// images and files the examples name.

var tools = []string{"ddfs", "mkfs.ddfs", "fsck.ddfs", "dedupe-tool", "trimtool"}

// helpExamples walks every command of every tool (the "Commands:" of each
// --help) and returns each one's example lines, keyed by command path.
func helpExamples(t *testing.T) map[string][]string {
	out := map[string][]string{}
	var walk func(path []string)
	walk = func(path []string) {
		r := must(t, run(t, t.TempDir(), path[0], append(path[1:], "--help")...), 0)
		sec := ""
		for _, line := range strings.Split(r.stdout, "\n") {
			if line != "" && !strings.HasPrefix(line, " ") {
				sec = strings.TrimSuffix(line, ":")
				continue
			}
			f := strings.Fields(line)
			switch {
			case sec == "Examples" && len(f) > 0:
				out[strings.Join(path, " ")] = append(out[strings.Join(path, " ")], strings.TrimSpace(line))
			case sec == "Commands" && len(f) > 0 && f[0] != "help" && f[0] != "completion":
				walk(append(append([]string{}, path...), f[0]))
			}
		}
	}
	for _, tool := range tools {
		walk([]string{tool})
	}
	return out
}

// isCommand tells an example command line from the prose some
// examples carry below them (indented further, or a sentence).
func isCommand(line string) bool {
	f := strings.Fields(line)
	if len(f) == 0 {
		return false
	}
	for _, tool := range append(tools, "echo", "zcat", "cp", "rm", "SOURCE_DATE_EPOCH=1700000000") {
		if f[0] == tool || f[0] == "bin/"+tool {
			return true
		}
	}
	return false
}

// fixture is built once: a dir with the images and host files the
// examples name; each example runs in its own copy of it.
var (
	fixtureOnce sync.Once
	fixtureDir  string
	fixtureErr  error
)

const fixtureScript = `set -e
mkdir -p tree/sub backups out rootfs/etc elsewhere bin
for t in ddfs mkfs.ddfs fsck.ddfs dedupe-tool trimtool; do ln -s "$BIN/$t" bin/$t; done
echo readme > tree/README; echo sub > tree/sub/f; head -c 3000000 /dev/urandom > tree/big
echo host > rootfs/etc/hostname; head -c 200000 /dev/urandom > vm.raw; cp vm.raw backups/a; cp vm.raw backups/b
echo y > x:y; echo new > new.txt
tar -cf rootfs.tar -C rootfs .; cp rootfs.tar alpine-minirootfs.tar; tar -cf app.tar -C tree .
gzip -c rootfs.tar > x.tar.gz; gzip -c rootfs.tar > alpine-minirootfs.tar.gz
mkfs.ddfs -q -b 256M disk.img
ddfs mkdir -p disk.img:/etc disk.img:/bin disk.img:/usr/bin disk.img:/usr/lib disk.img:/home/me disk.img:/srv \
	disk.img:/var/log disk.img:/var/cache disk.img:/tmp disk.img:/dir disk.img:/logs disk.img:/archive disk.img:/opt
printf 'root:x:0:0::/root:/bin/sh\nwww-data:x:33:33::/var/www:/bin/sh\n' > passwd
printf 'root:x:0:\nwww-data:x:33:\n' > group
ddfs cp passwd group rootfs/etc/hostname disk.img:/etc/
echo 'a=1' > a.conf; ddfs cp a.conf disk.img:/etc/a.conf; ddfs cp a.conf disk.img:/etc/shadow
ddfs cp vm.raw disk.img:/bin/ping; ddfs xattr set disk.img:/bin/ping security.capability cap
ddfs cp vm.raw disk.img:/usr/bin/tool; ddfs cp vm.raw disk.img:/vm; ddfs cp -r tree disk.img:/
for f in a x y f motd; do echo $f | ddfs cp - disk.img:/$f; done
ddfs xattr set disk.img:/f user.note hello; ddfs cp a.conf disk.img:/tmp/x; ddfs cp a.conf disk.img:/var/log/syslog
mkfs.ddfs -q -b 256M -d raid1 -m raid1 a.img b.img; ddfs cp -r tree a.img:/
mkfs.ddfs -q -b 256M -d raid1 -m raid1 c.img d.img
mkfs.ddfs -q -b 256M --dedupe backup.img; ddfs mkdir backup.img:/home backup.img:/scratch backup.img:/logs
ddfs cp vm.raw backup.img:/vm; ddfs cp -r tree backup.img:/home/
mkfs.ddfs -q -b 256M old.img; mkfs.ddfs -q -b 256M new.img
ddfs cp -r tree old.img:/home; ddfs cp -r tree new.img:/home
mkfs.ddfs -q -b 256M rootfs.img
mkfs.ddfs -q -b 256M -m raid1 ssd0.img elsewhere/hdd1.img
printf 'disk.img\na.img\nbackup.img\nold.img\n' > images.txt
`

func fixture(t *testing.T) string {
	fixtureOnce.Do(func() {
		fixtureDir, fixtureErr = os.MkdirTemp("", "ddfs-examples")
		if fixtureErr != nil {
			return
		}
		cmd := exec.Command("bash", "-c", fixtureScript)
		cmd.Dir = fixtureDir
		cmd.Env = append(os.Environ(), "BIN="+binDir, "PATH="+binDir+":"+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			fixtureErr = fmt.Errorf("fixture: %v\n%s", err, out)
		}
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return fixtureDir
}

// mkfsTargets are the image files a mkfs.ddfs line creates: the fixture's
// files of those names go first (mkfs refuses to overwrite an image).
func mkfsTargets(line string) []string {
	f := strings.Fields(line)
	var out []string
	for i, w := range f {
		if strings.HasSuffix(w, "mkfs.ddfs") {
			for _, a := range f[i+1:] {
				if a, _, _ = strings.Cut(a, ":"); strings.HasSuffix(a, ".img") {
					out = append(out, a)
				}
			}
		}
	}
	return out
}

// runExample runs script in a fresh copy of the fixture and returns its
// exit code and output (safe from several goroutines).
func runExample(t *testing.T, script string) (int, string) {
	dir, err := os.MkdirTemp("", "ddfs-example")
	if err != nil {
		return -1, err.Error()
	}
	defer os.RemoveAll(dir)
	src := fixture(t)
	cp := exec.Command("cp", "-a", "--sparse=always", src+"/.", dir)
	if out, err := cp.CombinedOutput(); err != nil {
		return -1, fmt.Sprintf("copy fixture: %v %s", err, out)
	}
	for _, line := range strings.Split(script, "\n") {
		for _, f := range mkfsTargets(line) {
			os.Remove(filepath.Join(dir, f))
		}
	}
	cmd := exec.Command("bash", "-c", "set -eo pipefail\n"+script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+binDir+":/usr/bin:/bin:/usr/sbin:/sbin")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		return -1, err.Error()
	}
	return 0, string(out)
}

// pending are examples known not to work yet, each with why; a line that
// contains a key is reported (t.Log) and not run. Keep this empty.
var pending = map[string]string{
	"mkfs.ddfs -d raid1 'nbd+unix": "needs the nbdkit servers the lines before start as root (/run, port 10809): e2e TestNBDSet runs the same",
	"ddfs cp -r src 'nbd+unix":     "needs the nbdkit servers (e2e TestNBDSet)",
	"fsck.ddfs local.img --device": "needs the nbdkit servers (e2e TestNBDSet)",
	"| ssh host":                   "needs a second host (e2e TestSendReceive pipes the same locally)",
}

func pendingFor(t *testing.T, line string) bool {
	for k, why := range pending {
		if strings.Contains(line, k) {
			t.Logf("not run: %q: %s", line, why)
			return true
		}
	}
	return false
}

// setups prepares the fixture for the examples that need more than it
// has: the first entry whose key the example contains applies.
var setups = []struct{ has, script string }{
	{"device add", ""},
	{"--degraded disk.img 2", "ddfs device add -b 1G disk.img disk2.img; rm disk2.img"},
	{"raid1c3 disk.img", "ddfs device add -b 1G disk.img disk2.img; ddfs device add -b 1G disk.img disk3.img"},
	{"raid6 disk.img", "ddfs device add -b 1G disk.img disk2.img; ddfs device add -b 1G disk.img disk3.img"},
	{"disk.img 2", "ddfs device add -b 1G disk.img disk2.img"},
	{"disk.img 1 ", "ddfs device add -b 1G disk.img disk2.img"},
	{"balance", "ddfs device add -b 1G disk.img disk2.img"},
	{"copy-a.img", "cp --sparse=always a.img copy-a.img; cp --sparse=always b.img copy-b.img"},
	{"vm-snap", "ddfs cp -a disk.img:/vm disk.img:/vm-snap"},
	{"--shard auto", "export JOB_COMPLETION_INDEX=1"},
	{"disk.img:/boot/efi", "mkdir -p efi/EFI/BOOT && echo boot > efi/EFI/BOOT/BOOTX64.EFI && ddfs mkdir -p disk.img:/boot && ddfs cp -r efi disk.img:/boot/"},
	{"disk.img@nightly2", "ddfs snapshot create disk.img nightly\nmkfs.ddfs -q -b 1G backup.img\nddfs send disk.img@nightly | ddfs receive -q backup.img\nddfs snapshot create disk.img nightly2"},
	{"disk.img@nightly", "ddfs snapshot create disk.img nightly && mkfs.ddfs -q -b 1G backup.img"},
	{"disk.img:/rootfs rootfs.squashfs", "ddfs mkdir disk.img:/rootfs && echo x > t && ddfs cp t disk.img:/rootfs/t"},
	{"disk.img:/seed seed.iso", "ddfs mkdir disk.img:/seed && echo '#cloud-config' > u && ddfs cp u disk.img:/seed/user-data"},
	{"create disk.img nightly2", "ddfs snapshot create disk.img nightly"},
	{"rollback disk.img before-upgrade", "ddfs snapshot create disk.img before-upgrade"},
	{"delete disk.img before-upgrade", "ddfs snapshot create disk.img before-upgrade"},
	// Foreign images (issue 41), made by their own tools (.ci/run installs them).
	{"-r rootfs.ext4", "mkdir -p t/etc && echo h > t/etc/hostname && mke2fs -q -t ext4 -d t rootfs.ext4 8M"},
	{"rootfs.ext4:", "mkdir -p t/etc && echo h > t/etc/hostname && mke2fs -q -t ext4 -d t rootfs.ext4 8M"},
	{"rootfs.squashfs:", "mkdir -p t/etc && echo ID=t > t/etc/os-release && mksquashfs t rootfs.squashfs -quiet -noappend -no-progress"},
	{"cidata.iso:", "mkdir -p t && echo '#cloud-config' > t/user-data && xorriso -as mkisofs -quiet -R -o cidata.iso t"},
	{"efi.img:", "mkfs.vfat -C efi.img 8192 >/dev/null && mmd -i efi.img ::/EFI && echo x > t.efi && mcopy -i efi.img t.efi ::/EFI/"},
	{"whole.img@2", "mkdir -p t/etc && echo h > t/etc/hostname && truncate -s 24M whole.img && sgdisk -n 1:2048:+2M -n 2:0:+10M whole.img >/dev/null && mke2fs -q -t ext4 -d t -E offset=3145728 whole.img 10M"},
}

func setupFor(line string) string {
	for _, s := range setups {
		if strings.Contains(line, s.has) {
			return s.script
		}
	}
	return ""
}

// wantExit is the exit an example's comment promises ("# they differ:
// exit 1"), else 0.
func wantExit(comment string) string {
	if m := exitNote.FindStringSubmatch(comment); m != nil {
		return m[1]
	}
	return "0"
}

// TestHelpExamples runs every example line of every --help (not those
// on /dev: a real device).
func TestHelpExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every example")
	}
	fixture(t)
	// Each distinct line once (a group's help repeats its commands').
	where := map[string]string{}
	for cmd, lines := range helpExamples(t) {
		for i := 0; i < len(lines); i++ {
			line := lines[i]
			if !isCommand(line) {
				continue
			}
			// A trailing backslash continues on the next line.
			for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
				i++
				line = strings.TrimSuffix(line, `\`) + " " + lines[i]
			}
			if strings.Contains(line, "/dev/") || pendingFor(t, line) {
				continue
			}
			where[line] = cmd
		}
	}
	if len(where) < 90 {
		t.Errorf("only %d examples found", len(where))
	}
	// The examples wait on fsync more than they compute: a few at a time.
	jobs := make(chan string)
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for line := range jobs {
				cmdPart, comment, _ := strings.Cut(line, " # ")
				if code, out := runExample(t, setupFor(line)+"\n"+cmdPart); fmt.Sprint(code) != wantExit(comment) {
					t.Errorf("%s --help example %q: exit %d\n%s", where[line], line, code, out)
				}
			}
		}()
	}
	for line := range where {
		jobs <- line
	}
	close(jobs)
	wg.Wait()
}

// exitNote is a comment's promise of an exit code: "..., exit 4" at its end.
var exitNote = regexp.MustCompile(`\bexit ([0-9]+)\)?\s*$`)

// TestReadmeExamples runs each ```sh block of the README as a script in a
// fresh fixture, line by line. A line whose comment starts with "TOOL:"
// shows an error (it must fail); one whose comment ends with "exit N"
// must exit N.
func TestReadmeExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every example")
	}
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(b), "```sh\n")[1:]
	for bi, blk := range blocks {
		blk = blk[:strings.Index(blk, "```")]
		if strings.Contains(blk, "make demo") {
			continue // the make targets are run by make itself
		}
		var script strings.Builder
		lines := strings.Split(blk, "\n")
		for i := 0; i < len(lines); i++ {
			line := lines[i]
			for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
				i++
				line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(lines[i])
			}
			if !isCommand(line) || pendingFor(t, line) {
				continue
			}
			cmdPart, comment, _ := strings.Cut(line, " # ")
			want := wantExit(comment)
			for _, tool := range tools {
				if strings.HasPrefix(strings.TrimSpace(comment), tool+":") {
					want = "fail"
				}
			}
			q := strings.ReplaceAll(cmdPart, "'", `'\''`)
			fmt.Fprintf(&script, "set +e; ( %s ); c=$?; set -e\n", cmdPart)
			fmt.Fprintf(&script, "case %s in fail) [ $c -ne 0 ] ;; *) [ $c -eq %s ] ;; esac || { echo 'README line: %s: exit '$c; exit 99; }\n", want, want, q)
		}
		if code, out := runExample(t, script.String()); code != 0 {
			t.Errorf("README block %d: exit %d\n%s\n--- script:\n%s", bi+1, code, out, script.String())
		}
	}
}
