package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDeviceCommands: set properties, add a device, see it in usage; the
// set opens from the new device and checks clean; new chunks may use it.
func TestDeviceCommands(t *testing.T) {
	dir := t.TempDir()
	sampleTree(t, dir)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-m", "raid1", "a.img", "b.img"), 0)
	must(t, run(t, dir, "ddfs", "device", "set", "a.img", "2", "rotational=1,seek_speed=100,bandwidth=80M"), 0)
	r := must(t, run(t, dir, "ddfs", "device", "add", "-b", "512M", "a.img", "c.img:rotational=1,tier=3"), 0)
	if !strings.Contains(r.stdout, "as device 3") {
		t.Fatalf("add: %q", r.stdout)
	}
	var usage []struct {
		DevID      uint64 `json:"devid"`
		Size       uint64 `json:"size"`
		Rotational bool   `json:"rotational"`
		SeekSpeed  uint64 `json:"seek_speed"`
		Bandwidth  uint64 `json:"bandwidth"`
		Tier       uint8  `json:"tier"`
		Types      []struct {
			Type      string `json:"type"`
			Allocated uint64 `json:"allocated"`
		} `json:"types"`
	}
	if err := json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "device", "usage", "--json", "c.img"), 0).stdout), &usage); err != nil {
		t.Fatal(err)
	}
	if len(usage) != 3 || !usage[1].Rotational || usage[1].SeekSpeed != 100 || usage[1].Bandwidth != 80<<20 || usage[2].Tier != 3 || usage[2].Size != 512<<20 {
		t.Fatalf("usage %+v", usage)
	}
	meta := uint64(0)
	for _, ty := range usage[0].Types {
		if ty.Type == "metadata" {
			meta += ty.Allocated
		}
	}
	if meta == 0 {
		t.Fatalf("usage %+v", usage)
	}
	must(t, run(t, dir, "fsck.ddfs", "c.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-r", "src", "c.img:/"), 0)
	must(t, run(t, dir, "fsck.ddfs", "--check-data", "b.img"), 0)
	r = must(t, run(t, dir, "ddfs", "device", "add", "a.img", "b.img"), 1)
	if !strings.Contains(r.stderr, "b.img is already device 2") {
		t.Fatalf("adding a member again: %q", r.stderr)
	}
}

// TestFallbackReported: ssd-metadata with one SSD cannot place raid1
// metadata on SSDs only; df says so. With dup metadata it can.
func TestFallbackReported(t *testing.T) {
	dir := t.TempDir()
	var df struct {
		Fallbacks []struct {
			Type   string   `json:"type"`
			DevIDs []uint64 `json:"devids"`
		} `json:"fallbacks"`
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-m", "raid1", "--alloc-policy", "ssd-metadata", "s.img", "h.img:rotational=1"), 0)
	json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "df", "--json", "s.img"), 0).stdout), &df)
	if len(df.Fallbacks) != 2 || df.Fallbacks[1].Type != "metadata" {
		t.Fatalf("raid1 metadata with one SSD: %+v", df.Fallbacks)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-f", "-m", "dup", "--alloc-policy", "ssd-metadata", "s.img", "h.img:rotational=1"), 0)
	df.Fallbacks = nil
	json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "df", "--json", "s.img"), 0).stdout), &df)
	if len(df.Fallbacks) != 0 {
		t.Fatalf("dup metadata fits the SSD: %+v", df.Fallbacks)
	}
}
