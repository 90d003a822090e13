package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapshotCommands: the snapshot commands end to end: a snapshot
// keeps a removed file, rollback brings it back, a second snapshot of the
// same name is refused with the CLI's one-line error, delete frees it,
// fsck refuses the image (operational error) instead of calling the
// shared nodes damage, and checks it clean once the last snapshot is gone.
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
