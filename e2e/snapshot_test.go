package e2e

import (
	"os"
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
