package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapshotCommands: the snapshot commands end to end: a snapshot
// keeps a removed file, rollback brings it back, a second snapshot of the
// same name is refused with the CLI's one-line error, fsck checks the
// image with its snapshot clean, delete frees it.
func TestSnapshotCommands(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "s.img"), 0)
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte(strings.Repeat("kept by a snapshot\n", 4096)), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "ddfs", "cp", "./f", "s.img:/f"), 0)
	must(t, run(t, dir, "ddfs", "snapshot", "create", "s.img", "before"), 0)
	must(t, run(t, dir, "ddfs", "rm", "s.img:/f"), 0)
	if r := must(t, run(t, dir, "ddfs", "snapshot", "list", "s.img"), 0); !strings.Contains(r.stdout, "before") {
		t.Fatalf("list: %q", r.stdout)
	}
	r := must(t, run(t, dir, "ddfs", "snapshot", "create", "s.img", "before"), 1)
	if want := "ddfs: snapshot create: s.img: \"before\": snapshot exists\n"; r.stderr != want {
		t.Fatalf("second create: %q, want %q", r.stderr, want)
	}
	must(t, run(t, dir, "ddfs", "cat", "s.img:/f"), 1)
	must(t, run(t, dir, "ddfs", "rollback", "s.img", "before"), 0)
	if r := must(t, run(t, dir, "ddfs", "cat", "s.img:/f"), 0); r.stdout != strings.Repeat("kept by a snapshot\n", 4096) {
		t.Fatalf("after rollback: %d bytes", len(r.stdout))
	}
	// fsck checks the snapshot's tree and the shared nodes' counts.
	if r := must(t, run(t, dir, "fsck.ddfs", "-n", "--json", "s.img"), 0); !strings.Contains(r.stdout, `"snapshots_checked": 1`) {
		t.Fatalf("fsck: %q", r.stdout)
	}
	must(t, run(t, dir, "ddfs", "snapshot", "delete", "s.img", "before"), 0)
	if r := must(t, run(t, dir, "ddfs", "snapshot", "list", "--json", "s.img"), 0); !strings.Contains(r.stdout, `"snapshots": []`) {
		t.Fatalf("list after delete: %q", r.stdout)
	}
	must(t, run(t, dir, "ddfs", "snapshot", "delete", "s.img", "before"), 1)
	// The last snapshot gone, nothing is shared.
	must(t, run(t, dir, "fsck.ddfs", "-n", "s.img"), 0)
}

// TestSnapshotOperands: IMAGE@NAME:PATH reads a snapshot wherever a
// command reads, a write to it fails with EROFS in the CLI's one-line
// form, an unknown name is named as the user wrote it, and an all-digit
// name on an image without partitions is the snapshot.
func TestSnapshotOperands(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "s.img"), 0)
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		must(t, run(t, dir, "ddfs", "cp", "./f", "s.img:/d/f"), 0)
	}
	must(t, run(t, dir, "ddfs", "mkdir", "s.img:/d"), 0)
	write("old\n")
	must(t, run(t, dir, "ddfs", "snapshot", "create", "s.img", "before"), 0)
	must(t, run(t, dir, "ddfs", "snapshot", "create", "s.img", "7"), 0)
	write("new\n")
	for _, c := range []struct {
		args []string
		out  string
	}{
		{[]string{"cat", "s.img@before:/d/f"}, "old\n"},
		{[]string{"cat", "s.img@7:/d/f"}, "old\n"},
		{[]string{"cat", "s.img:/d/f"}, "new\n"},
		{[]string{"ls", "s.img@before:/d"}, "f\n"},
		{[]string{"find", "s.img@before:/"}, "/\n/d\n/d/f\n"},
	} {
		if r := must(t, run(t, dir, "ddfs", c.args...), 0); r.stdout != c.out {
			t.Fatalf("%v: %q, want %q", c.args, r.stdout, c.out)
		}
	}
	must(t, run(t, dir, "ddfs", "cp", "s.img@before:/d/f", "./out"), 0)
	if b, err := os.ReadFile(filepath.Join(dir, "out")); err != nil || string(b) != "old\n" {
		t.Fatalf("cp out of a snapshot: %q %v", b, err)
	}
	if r := must(t, run(t, dir, "ddfs", "diff", "s.img@before:/d/f", "s.img:/d/f"), 1); !strings.Contains(r.stdout, "differ") {
		t.Fatalf("diff: %q", r.stdout)
	}
	must(t, run(t, dir, "ddfs", "diff", "s.img@before:/", "s.img@7:/"), 0)
	if r := must(t, run(t, dir, "ddfs", "rm", "s.img@before:/d/f"), 1); r.stderr != "ddfs: rm: s.img@before: a snapshot: read-only file system\n" {
		t.Fatalf("rm in a snapshot: %q", r.stderr)
	}
	if r := must(t, run(t, dir, "ddfs", "cat", "s.img@nope:/d/f"), 1); r.stderr != "ddfs: cat: s.img@nope: no such snapshot\n" {
		t.Fatalf("unknown snapshot: %q", r.stderr)
	}
	if r := must(t, run(t, dir, "ddfs", "cat", "s.img:/d/f"), 0); r.stdout != "new\n" {
		t.Fatalf("live after the refused write: %q", r.stdout)
	}
}

// TestSendReceive: ddfs send | ddfs receive through a pipe makes in a
// second image a snapshot diff finds equal to the sent one, fsck clean;
// a cut stream fails with the CLI's one line and leaves the target with
// no new snapshot and clean.
func TestSendReceive(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "a.img"), 0)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "b.img"), 0)
	src, _ := filepath.Abs("../format")
	must(t, run(t, dir, "ddfs", "cp", "-a", src, "a.img:/src"), 0)
	must(t, run(t, dir, "ddfs", "snapshot", "create", "a.img", "s1"), 0)
	must(t, run(t, dir, "ddfs", "rm", "-r", "a.img:/src"), 0) // the live tree moves on
	pipe := exec.Command("sh", "-ec", `"$B/ddfs" send a.img@s1 | "$B/ddfs" receive b.img`)
	pipe.Dir, pipe.Env = dir, append(os.Environ(), "B="+binDir)
	if r := must(t, runCmd(t, pipe), 0); !strings.HasPrefix(r.stdout, "received snapshot s1: ") {
		t.Fatalf("receive: %q", r.stdout)
	}
	must(t, run(t, dir, "ddfs", "diff", "-r", "a.img@s1:/", "b.img@s1:/"), 0)
	must(t, run(t, dir, "fsck.ddfs", "--check-data", "b.img"), 0)
	// An incremental stream on s1: a file changed, one added.
	must(t, run(t, dir, "ddfs", "cp", "-a", src, "a.img:/src2"), 0)
	must(t, run(t, dir, "ddfs", "snapshot", "create", "a.img", "s2"), 0)
	must(t, run(t, dir, "ddfs", "send", "--parent", "a.img@s1", "a.img@s2", "-o", "inc.stream"), 0)
	must(t, run(t, dir, "ddfs", "receive", "-q", "b.img", "-i", "inc.stream"), 0)
	must(t, run(t, dir, "ddfs", "diff", "-r", "a.img@s2:/", "b.img@s2:/"), 0)
	if r := must(t, run(t, dir, "ddfs", "send", "--parent", "a.img@nope", "a.img@s2"), 1); r.stderr != "ddfs: send: a.img@nope: \"nope\": no such snapshot\n" {
		t.Fatalf("missing parent: %q", r.stderr)
	}
	must(t, run(t, dir, "ddfs", "send", "a.img@s1", "-o", "s1.stream"), 0)
	whole, err := os.ReadFile(filepath.Join(dir, "s1.stream"))
	if err != nil || len(whole) < 10000 {
		t.Fatalf("stream: %d bytes, %v", len(whole), err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cut.stream"), whole[:len(whole)-5000], 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "c.img"), 0)
	if r := must(t, run(t, dir, "ddfs", "receive", "c.img", "-i", "cut.stream"), 1); !strings.HasPrefix(r.stderr, "ddfs: receive: c.img: bad send stream: ") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("cut stream: %q", r.stderr)
	}
	if r := must(t, run(t, dir, "ddfs", "snapshot", "list", "--json", "c.img"), 0); !strings.Contains(r.stdout, `"snapshots": []`) {
		t.Fatalf("a cut stream left a snapshot: %q", r.stdout)
	}
	must(t, run(t, dir, "fsck.ddfs", "c.img"), 0)
	// Kept with -s, then resumed from the whole stream.
	if r := must(t, run(t, dir, "ddfs", "receive", "-s", "c.img", "-i", "cut.stream"), 1); !strings.Contains(r.stderr, "(kept: ddfs receive --resume goes on from byte ") {
		t.Fatalf("resumable receive of a cut stream: %q", r.stderr)
	}
	must(t, run(t, dir, "fsck.ddfs", "c.img"), 0)
	must(t, run(t, dir, "ddfs", "receive", "-q", "--resume", "c.img", "-i", "s1.stream"), 0)
	must(t, run(t, dir, "ddfs", "diff", "-r", "a.img@s1:/", "c.img@s1:/"), 0)
}

// TestSendCompressedData: send --compressed-data from an image that
// compresses is smaller than the plain stream, and received (into an
// image that compresses and one that does not) diff finds equal, fsck
// --check-data clean.
func TestSendCompressedData(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "--compress", "zstd", "a.img"), 0)
	src, _ := filepath.Abs("../format")
	must(t, run(t, dir, "ddfs", "cp", "-a", src, "a.img:/src"), 0)
	must(t, run(t, dir, "ddfs", "snapshot", "create", "a.img", "s1"), 0)
	must(t, run(t, dir, "ddfs", "send", "a.img@s1", "-o", "plain.stream"), 0)
	must(t, run(t, dir, "ddfs", "send", "--compressed-data", "a.img@s1", "-o", "enc.stream"), 0)
	plain, err1 := os.Stat(filepath.Join(dir, "plain.stream"))
	enc, err2 := os.Stat(filepath.Join(dir, "enc.stream"))
	if err1 != nil || err2 != nil || enc.Size() > plain.Size()*2/3 {
		t.Fatalf("stream of %v bytes with --compressed-data, %v without (%v %v)", enc.Size(), plain.Size(), err1, err2)
	}
	for _, img := range []string{"zstd.img", "none.img"} {
		must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "--compress", strings.TrimSuffix(img, ".img"), img), 0)
		must(t, run(t, dir, "ddfs", "receive", "-q", img, "-i", "enc.stream"), 0)
		must(t, run(t, dir, "ddfs", "diff", "-r", "a.img@s1:/", img+"@s1:/"), 0)
		must(t, run(t, dir, "fsck.ddfs", "--check-data", img), 0)
	}
}

// TestToolsKeepSnapshots: the tools that rewrite or move data leave a
// snapshot as it was: dedupe-tool run (sharing the live tree's blocks),
// device add and remove (relocating every chunk, shared nodes too),
// balance, scrub --repair and trimtool; after each, the snapshot diffs
// equal to the tree it was taken of and fsck --check-data is clean.
func TestToolsKeepSnapshots(t *testing.T) {
	dir := t.TempDir()
	src, _ := filepath.Abs("../format")
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "a.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", src, "a.img:/a"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", src, "a.img:/b"), 0)
	must(t, run(t, dir, "ddfs", "snapshot", "create", "a.img", "s"), 0)
	must(t, run(t, dir, "ddfs", "rm", "-r", "a.img:/a"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", src, "a.img:/c"), 0)
	if err := os.WriteFile(filepath.Join(dir, "b.img"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "b.img"), 256<<20); err != nil {
		t.Fatal(err)
	}
	img := "a.img"
	for _, step := range [][]string{
		{"dedupe-tool", "run", "a.img"},
		{"ddfs", "device", "add", "a.img", "b.img"},
		{"ddfs", "device", "remove", "a.img", "1"},
		{"ddfs", "balance", "b.img"},
		{"ddfs", "scrub", "--repair", "b.img"},
		{"trimtool", "b.img"},
	} {
		must(t, run(t, dir, step[0], step[1:]...), 0)
		if len(step) > 2 && step[2] == "remove" {
			img = "b.img" // a.img is no longer a member
		}
		for _, p := range []string{"/a", "/b"} {
			if r := run(t, dir, "ddfs", "diff", "-r", img+"@s:"+p, src); r.code != 0 {
				t.Fatalf("after %v: snapshot %s differs: %s%s", step, p, r.stdout, r.stderr)
			}
		}
		must(t, run(t, dir, "fsck.ddfs", "--check-data", img), 0)
	}
}
