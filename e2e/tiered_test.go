package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// holds reports whether the image file at path contains marker in some
// 1 MiB-aligned buffer (data extents are sector aligned and the test
// files repeat the 16-byte marker, so a whole copy sits in one buffer).
func holds(t *testing.T, path string, marker []byte) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		n, err := io.ReadFull(f, buf)
		if bytes.Contains(buf[:n], marker) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// TestTieredDataTier: tiered policy on 2 "SSDs" + 2 "HDDs"; a directory
// with data-tier 1 keeps its files' data on the SSDs (and its new
// subdirectories inherit the property), other data goes to the HDDs,
// nothing is a fallback, and the image checks clean.
func TestTieredDataTier(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-d", "single", "-m", "raid1", "--alloc-policy", "tiered",
		"s0.img", "s1.img", "h0.img:rotational=1", "h1.img:rotational=1"), 0)
	fast, slow := bytes.Repeat([]byte("FAST-TIER-DATA-1"), 1<<15), bytes.Repeat([]byte("slow-tier-data-2"), 1<<15)
	os.WriteFile(filepath.Join(dir, "fast.bin"), fast, 0o644)
	os.WriteFile(filepath.Join(dir, "slow.bin"), slow, 0o644)

	must(t, run(t, dir, "ddfs", "mkdir", "s0.img:/fast"), 0)
	must(t, run(t, dir, "ddfs", "prop", "set", "s0.img:/fast", "data-tier", "1"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "s0.img:/fast/sub"), 0)
	if r := must(t, run(t, dir, "ddfs", "prop", "get", "s0.img:/fast/sub", "data-tier"), 0); r.stdout != "data-tier=1\n" {
		t.Fatalf("inherited data-tier: %q", r.stdout)
	}
	if r := must(t, run(t, dir, "ddfs", "prop", "get", "s0.img:/", "data-tier"), 0); r.stdout != "data-tier=inherit\n" {
		t.Fatalf("root data-tier: %q", r.stdout)
	}
	must(t, run(t, dir, "ddfs", "prop", "set", "s0.img:/fast", "data-tier", "0x"), 2)
	must(t, run(t, dir, "ddfs", "cp", "fast.bin", "s0.img:/fast/sub/"), 0)
	must(t, run(t, dir, "ddfs", "cp", "slow.bin", "s0.img:/"), 0)

	for _, c := range []struct {
		img        string
		fast, slow bool
	}{{"s0.img", true, false}, {"s1.img", true, false}, {"h0.img", false, true}, {"h1.img", false, true}} {
		f, s := holds(t, filepath.Join(dir, c.img), fast[:16]), holds(t, filepath.Join(dir, c.img), slow[:16])
		if f && !c.fast || s && !c.slow {
			t.Errorf("%s holds fast data %v, slow data %v", c.img, f, s)
		}
	}
	if !holds(t, filepath.Join(dir, "s0.img"), fast[:16]) && !holds(t, filepath.Join(dir, "s1.img"), fast[:16]) {
		t.Error("fast data on no SSD")
	}
	if !holds(t, filepath.Join(dir, "h0.img"), slow[:16]) && !holds(t, filepath.Join(dir, "h1.img"), slow[:16]) {
		t.Error("slow data on no HDD")
	}

	var df struct {
		Fallbacks []json.RawMessage `json:"fallbacks"`
	}
	json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "df", "--json", "h1.img"), 0).stdout), &df)
	if len(df.Fallbacks) != 0 {
		t.Fatalf("fallbacks: %s", df.Fallbacks)
	}
	var usage []struct {
		DevID uint64 `json:"devid"`
		Tier  uint8  `json:"tier"`
	}
	json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "device", "usage", "--json", "s0.img"), 0).stdout), &usage)
	if len(usage) != 4 || usage[0].Tier != 1 || usage[1].Tier != 1 || usage[2].Tier != 2 || usage[3].Tier != 2 {
		t.Fatalf("tiers: %+v", usage)
	}
	must(t, run(t, dir, "ddfs", "prop", "set", "s0.img", "small-data-max", "64K"), 0)
	if r := must(t, run(t, dir, "ddfs", "prop", "get", "s0.img", "small-data-max"), 0); r.stdout != "small-data-max=65536\n" {
		t.Fatalf("small-data-max: %q", r.stdout)
	}
	r := must(t, run(t, dir, "fsck.ddfs", "--check-data", "h0.img"), 0)
	if strings.Contains(r.stdout, "problem") {
		t.Fatalf("fsck: %s", r.stdout)
	}
}

// TestTieredSpillReported: when the HDD tier is full, data spills to the
// SSDs and df lists those chunks as fallbacks.
func TestTieredSpillReported(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-d", "raid1", "-m", "raid1", "--alloc-policy", "tiered",
		"s0.img", "s1.img", "s2.img", "h0.img:rotational=1,bandwidth=150M", "h1.img:rotational=1"), 0)
	os.WriteFile(filepath.Join(dir, "big.bin"), bytes.Repeat([]byte("0123456789abcdef"), 10<<20), 0o644)
	cp := must(t, run(t, dir, "ddfs", "cp", "--stats", "big.bin", "s0.img:/"), 0)
	if !regexp.MustCompile(`alloc: [1-9]\d* new chunk\(s\) placed outside the tiered policy's preferred devices`).MatchString(cp.stderr) {
		t.Fatalf("cp --stats does not report the fallback: %q", cp.stderr)
	}
	var df struct {
		Fallbacks []struct {
			Type   string   `json:"type"`
			DevIDs []uint64 `json:"devids"`
		} `json:"fallbacks"`
	}
	r := must(t, run(t, dir, "ddfs", "df", "--json", "s0.img"), 0)
	json.Unmarshal([]byte(r.stdout), &df)
	if len(df.Fallbacks) == 0 {
		t.Fatalf("160 MiB of raid1 data on two 128 MiB HDDs: no fallback reported: %s", r.stdout)
	}
	for _, fb := range df.Fallbacks {
		if fb.Type != "data" || len(fb.DevIDs) != 2 || fb.DevIDs[0] > 3 || fb.DevIDs[1] > 3 {
			t.Fatalf("fallback %+v, want raid1 data on two SSDs", fb)
		}
	}
	if r := must(t, run(t, dir, "ddfs", "df", "s0.img"), 0); !strings.Contains(r.stdout, "Fallback: data/raid1") {
		t.Fatalf("df text: %s", r.stdout)
	}
	must(t, run(t, dir, "fsck.ddfs", "s0.img"), 0)
}
