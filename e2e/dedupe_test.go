package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func init() { extraBinaries["dedupe-tool"] = "../dedupe-tool" }

// TestDedupeCLI: mkfs --dedupe --compress, two copies of a tree, status
// with the JSON keys, a subtree with dedupe off, fsck --check-data;
// with the default hash (xxh3: matches proven by tail or compare) and with
// blake3.
func TestDedupeCLI(t *testing.T) {
	for _, hash := range []string{"xxh3", "blake3"} {
		t.Run(hash, func(t *testing.T) { testDedupeCLI(t, hash) })
	}
}

func testDedupeCLI(t *testing.T, hash string) {
	dir := t.TempDir()
	sampleTree(t, dir)
	os.WriteFile(filepath.Join(dir, "src/text"), bytes.Repeat([]byte("compressible text "), 40000), 0o644)
	args := []string{"-q", "-b", "512M", "--dedupe", "--dedupe-block", "64K", "--compress", "zstd:3", "disk.img"}
	if hash != "xxh3" {
		args = append(args, "--dedupe-hash", hash)
	}
	must(t, run(t, dir, "mkfs.ddfs", args...), 0)
	must(t, run(t, dir, "ddfs", "cp", "-r", "src", "disk.img:/one"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "disk.img:/nodedupe"), 0)
	must(t, run(t, dir, "ddfs", "prop", "set", "disk.img:/nodedupe", "dedupe", "off"), 0)
	if r := must(t, run(t, dir, "ddfs", "prop", "get", "disk.img:/nodedupe", "dedupe"), 0); r.stdout != "dedupe=off\n" {
		t.Fatalf("prop get: %q", r.stdout)
	}
	must(t, run(t, dir, "ddfs", "cp", "-r", "src", "disk.img:/two"), 0)
	r := must(t, run(t, dir, "dedupe-tool", "status", "--json", "disk.img"), 0)
	var st map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"enabled", "block_size", "hash", "logical_bytes", "physical_bytes", "dedupe_saved_bytes", "compress_saved_bytes", "dedupe_hits", "index_entries", "index_disk_bytes", "index_memory_bytes"} {
		if _, ok := st[k]; !ok {
			t.Fatalf("status --json lacks %q: %s", k, r.stdout)
		}
	}
	if st["enabled"] != true || st["hash"] != hash || st["block_size"].(float64) != 65536 || st["dedupe_hits"].(float64) == 0 || st["dedupe_saved_bytes"].(float64) < 4e6 || st["compress_saved_bytes"].(float64) < 5e5 {
		t.Fatalf("status: %s", r.stdout)
	}
	hits := st["dedupe_hits"].(float64)
	// The subtree with dedupe off stores its own copy.
	must(t, run(t, dir, "ddfs", "cp", "-r", "src", "disk.img:/nodedupe/"), 0)
	json.Unmarshal([]byte(must(t, run(t, dir, "dedupe-tool", "status", "--json", "disk.img"), 0).stdout), &st)
	if st["dedupe_hits"].(float64) != hits {
		t.Fatalf("dedupe off subtree still deduped: %v -> %v", hits, st["dedupe_hits"])
	}
	if r := must(t, run(t, dir, "ddfs", "cat", "disk.img:/two/sub/big.bin"), 0); r.stdout != strings.Repeat("0123456789abcdef", 300000) {
		t.Fatal("deduped copy reads back wrong")
	}
	must(t, run(t, dir, "ddfs", "rm", "-r", "disk.img:/one"), 0)
	must(t, run(t, dir, "fsck.ddfs", "--check-data", "disk.img"), 0)
	must(t, run(t, dir, "dedupe-tool", "disable", "disk.img"), 0)
	json.Unmarshal([]byte(must(t, run(t, dir, "dedupe-tool", "status", "--json", "disk.img"), 0).stdout), &st)
	if st["enabled"] != false {
		t.Fatal("disable did not stick")
	}
	if df := must(t, run(t, dir, "ddfs", "df", "disk.img"), 0); !strings.Contains(df.stdout, "by dedupe") {
		t.Fatalf("df: %s", df.stdout)
	}
}
