package e2e

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// unreadable lists, sorted, the files of img that ddfs cat cannot read.
func unreadable(t *testing.T, dir, img string) []string {
	t.Helper()
	var out []string
	files := must(t, run(t, dir, "ddfs", "find", img+":/", "-type", "f"), 0).stdout
	for _, f := range strings.Fields(files) {
		if run(t, dir, "ddfs", "cat", img+":"+f).code != 0 {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// TestFsckRebuildCsums: on the frozen csum-item-deleted image, fsck -y
// invents no checksums (exit 4, the files stay unreadable);
// fsck.ddfs --rebuild-csums prints one line for each file it vouches
// for, exactly the files ddfs cat could not read, and exits 1; after it
// fsck is clean and every file reads. --json lists the same files under
// csums_rebuilt; -n with --rebuild-csums is a usage error.
func TestFsckRebuildCsums(t *testing.T) {
	dir := t.TempDir()
	gz := filepath.Join("..", "testimages", "damaged", "csum-item-deleted.1.img.gz")
	gunzipTo(t, gz, filepath.Join(dir, "d.img"))
	gunzipTo(t, gz, filepath.Join(dir, "j.img"))
	must(t, run(t, dir, "fsck.ddfs", "-y", "d.img"), 4)
	lost := unreadable(t, dir, "d.img")
	if !slices.Contains(lost, "/mid") {
		t.Fatalf("unreadable after -y: %v, want /mid among them", lost)
	}
	must(t, run(t, dir, "fsck.ddfs", "-n", "--rebuild-csums", "d.img"), 16)

	r := must(t, run(t, dir, "fsck.ddfs", "--rebuild-csums", "d.img"), 1)
	const prefix = "fsck.ddfs: d.img: checksums made from the data as it reads now: "
	var vouched []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if p, ok := strings.CutPrefix(line, prefix); ok {
			vouched = append(vouched, p)
		}
	}
	if !slices.Equal(vouched, lost) {
		t.Fatalf("vouched for %v, want the unreadable files %v\n%s", vouched, lost, r.stdout)
	}
	must(t, run(t, dir, "fsck.ddfs", "d.img"), 0)
	if got := unreadable(t, dir, "d.img"); len(got) != 0 {
		t.Fatalf("unreadable after --rebuild-csums: %v", got)
	}

	var rep struct {
		Rebuilt []struct {
			Path string `json:"path"`
		} `json:"csums_rebuilt"`
	}
	js := must(t, run(t, dir, "fsck.ddfs", "--rebuild-csums", "--json", "j.img"), 1).stdout
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range rep.Rebuilt {
		paths = append(paths, f.Path)
	}
	if !slices.Equal(paths, lost) {
		t.Fatalf("--json csums_rebuilt %v, want %v", paths, lost)
	}
}
