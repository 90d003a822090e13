package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func init() { extraBinaries["trimtool"] = "../trimtool" }

// TestTrimtool: removing files and trimming gives the space back to the
// host (allocated bytes drop by at least the freed data), the rest of the
// data stays intact (fsck --check-data), -m skips small ranges and
// --dry-run changes nothing.
func TestTrimtool(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.MkdirAll(src, 0o755)
	for i := 0; i < 40; i++ {
		b := make([]byte, 256<<10)
		for j := range b {
			b[j] = byte(i*7 + j)
		}
		os.WriteFile(filepath.Join(src, "f"+strings.Repeat("x", i%5)+string(rune('a'+i%26))+string(rune('a'+i/26))), b, 0o644)
	}
	img := filepath.Join(dir, "t.img")
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "512M", "t.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-r", "src", "t.img:/"), 0)
	must(t, run(t, dir, "trimtool", "t.img"), 0)
	before := allocated(t, img)
	// Remove every second file: ~5 MiB of data.
	ents, _ := os.ReadDir(src)
	var freed int64
	for i, e := range ents {
		if i%2 == 0 {
			must(t, run(t, dir, "ddfs", "rm", "t.img:/src/"+e.Name()), 0)
			freed += 256 << 10
		}
	}
	var dry struct {
		Devices []struct {
			Bytes    uint64 `json:"bytes"`
			Discards uint64 `json:"discards"`
		} `json:"devices"`
	}
	json.Unmarshal([]byte(must(t, run(t, dir, "trimtool", "--dry-run", "--json", "t.img"), 0).stdout), &dry)
	if allocated(t, img) < before || len(dry.Devices) != 1 || dry.Devices[0].Discards == 0 {
		t.Fatalf("dry run: %+v", dry)
	}
	var big struct {
		Devices []struct {
			Discards uint64 `json:"discards"`
		} `json:"devices"`
	}
	json.Unmarshal([]byte(must(t, run(t, dir, "trimtool", "--dry-run", "--json", "-m", "300K", "t.img"), 0).stdout), &big)
	if big.Devices[0].Discards >= dry.Devices[0].Discards {
		t.Fatalf("-m 300K kept %d of %d discards", big.Devices[0].Discards, dry.Devices[0].Discards)
	}
	r := must(t, run(t, dir, "trimtool", "-v", "t.img"), 0)
	if !strings.Contains(r.stdout, "discards") {
		t.Fatalf("-v: %q", r.stdout)
	}
	after := allocated(t, img)
	if before-after < freed {
		t.Fatalf("allocated %d -> %d: dropped %d, freed %d", before, after, before-after, freed)
	}
	must(t, run(t, dir, "fsck.ddfs", "--check-data", "t.img"), 0)
}
