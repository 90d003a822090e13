package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// usageDev is what ddfs info --json and ddfs device usage --json both say
// of a device.
type usageDev struct {
	DevID uint64 `json:"devid"`
	Path  string `json:"path"`
	Tier  int    `json:"tier"`
}

// TestDeviceUsageAsInfo: ddfs device usage names each device by the path
// it was opened by (not its empty path hint) and gives it the tier ddfs
// info gives it: an SSD tier 1, an HDD tier 2 (by speed), a device with
// the property tier=3 tier 3, under any allocation policy.
func TestDeviceUsageAsInfo(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "set"), 0o755)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-m", "raid1", "set/s.img", "set/h.img:rotational=1", "set/c.img:tier=3"), 0)
	want := []usageDev{{1, "set/s.img", 1}, {2, "set/h.img", 2}, {3, "set/c.img", 3}}
	var in struct {
		Devices []usageDev `json:"devices"`
	}
	var usage []usageDev
	for _, policy := range []string{"classic", "tiered"} {
		must(t, run(t, dir, "ddfs", "prop", "set", "set/s.img", "alloc-policy", policy), 0)
		if err := json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "info", "--json", "set/h.img"), 0).stdout), &in); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "device", "usage", "--json", "set/h.img"), 0).stdout), &usage); err != nil {
			t.Fatal(err)
		}
		if !equalDevs(in.Devices, want) || !equalDevs(usage, want) {
			t.Errorf("%s: info says %+v, device usage %+v; want %+v", policy, in.Devices, usage, want)
		}
	}
	text := must(t, run(t, dir, "ddfs", "device", "usage", "set/h.img"), 0).stdout
	if !strings.Contains(text, "devid 2 set/h.img: ") || !strings.Contains(text, ", tier 2\n") {
		t.Errorf("device usage: %s", text)
	}
}

func equalDevs(a, b []usageDev) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
