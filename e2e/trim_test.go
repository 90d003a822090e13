package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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

// TestOnlineDiscard sets each discard policy through the CLIs, removes
// files, and checks without trimtool that the image gave the freed data
// back (sync, async) or kept it (off), that --stats counts the discards,
// and that the image stays clean.
func TestOnlineDiscard(t *testing.T) {
	for _, policy := range []string{"off", "sync", "async"} {
		t.Run(policy, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "src")
			os.MkdirAll(src, 0o755)
			for i := 0; i < 24; i++ {
				b := make([]byte, 512<<10)
				for j := range b {
					b[j] = byte(i*13 + j*7 + j>>9)
				}
				os.WriteFile(filepath.Join(src, fmt.Sprintf("f%02d", i)), b, 0o644)
			}
			img := filepath.Join(dir, "t.img")
			must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "t.img"), 0)
			if policy == "async" {
				must(t, run(t, dir, "trimtool", "policy", "t.img", "async", "--metadata-min", "2M", "--max-bytes-per-commit", "0"), 0)
			} else {
				must(t, run(t, dir, "ddfs", "prop", "set", "t.img", "discard", policy), 0)
			}
			var pol struct {
				Discard     string `json:"discard"`
				MetadataMin uint64 `json:"metadata_min"`
			}
			json.Unmarshal([]byte(must(t, run(t, dir, "trimtool", "policy", "--json", "t.img"), 0).stdout), &pol)
			if pol.Discard != policy || (policy == "async" && pol.MetadataMin != 2<<20) {
				t.Fatalf("policy: %+v", pol)
			}
			if got := must(t, run(t, dir, "ddfs", "prop", "get", "t.img", "discard"), 0).stdout; !strings.Contains(got, policy) {
				t.Fatalf("prop get discard: %q", got)
			}
			must(t, run(t, dir, "ddfs", "cp", "-r", "src", "t.img:/"), 0)
			before := allocated(t, img)
			var args []string
			for i := 0; i < 24; i += 2 {
				args = append(args, fmt.Sprintf("t.img:/src/f%02d", i))
			}
			r := must(t, run(t, dir, "ddfs", append([]string{"rm", "--stats"}, args...)...), 0)
			freed := int64(12 * 512 << 10)
			dropped := before - allocated(t, img)
			discards := regexp.MustCompile(`discards (\d+)`).FindStringSubmatch(r.stderr)
			if discards == nil {
				t.Fatalf("--stats without discards: %q", r.stderr)
			}
			switch policy {
			case "off":
				if dropped > 0 || discards[1] != "0" {
					t.Fatalf("off: image shrank by %d, %s discards", dropped, discards[1])
				}
			default:
				// The commit also wrote a few new metadata nodes (async
				// keeps the freed old ones until they join a 2 MiB range).
				if dropped < freed-256<<10 || discards[1] == "0" {
					t.Fatalf("%s: image shrank by %d of %d freed, %s discards", policy, dropped, freed, discards[1])
				}
			}
			must(t, run(t, dir, "fsck.ddfs", "--check-data", "t.img"), 0)
			for i := 1; i < 24; i += 2 {
				got := must(t, run(t, dir, "ddfs", "cat", fmt.Sprintf("t.img:/src/f%02d", i)), 0).stdout
				want, _ := os.ReadFile(filepath.Join(src, fmt.Sprintf("f%02d", i)))
				if got != string(want) {
					t.Fatalf("f%02d changed", i)
				}
			}
		})
	}
}

// TestTrimLoopDevice runs trimtool and the async policy on a real block
// device (a loop device over an image file, which turns BLKDISCARD into
// hole punching): the backing file gives the freed space back. Skipped
// where loop devices are not available (not root, no losetup).
func TestTrimLoopDevice(t *testing.T) {
	dir, loop, backing := loopDevice(t)
	src := filepath.Join(dir, "src")
	os.MkdirAll(src, 0o755)
	for i := 0; i < 16; i++ {
		b := make([]byte, 1<<20)
		for j := range b {
			b[j] = byte(i*31 + j*3 + j>>11)
		}
		os.WriteFile(filepath.Join(src, fmt.Sprintf("f%02d", i)), b, 0o644)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-f", loop), 0)
	must(t, run(t, dir, "ddfs", "cp", "-r", "src", loop+":/"), 0)
	must(t, run(t, dir, "trimtool", loop), 0)
	before := allocated(t, backing)
	for i := 0; i < 8; i++ {
		must(t, run(t, dir, "ddfs", "rm", fmt.Sprintf("%s:/src/f%02d", loop, i)), 0)
	}
	var res struct {
		Devices []struct {
			Bytes    uint64 `json:"bytes"`
			Discards uint64 `json:"discards"`
			Note     string `json:"note"`
		} `json:"devices"`
	}
	json.Unmarshal([]byte(must(t, run(t, dir, "trimtool", "-v", "--json", loop), 0).stdout), &res)
	if len(res.Devices) != 1 || res.Devices[0].Discards == 0 || res.Devices[0].Note != "" {
		t.Fatalf("trimtool on %s: %+v", loop, res)
	}
	mid := allocated(t, backing)
	if before-mid < 8<<20 {
		t.Fatalf("BLKDISCARD gave back %d bytes of 8 MiB freed", before-mid)
	}
	// Online: async discard on the block device.
	must(t, run(t, dir, "trimtool", "policy", loop, "async"), 0)
	for i := 8; i < 12; i++ {
		must(t, run(t, dir, "ddfs", "rm", fmt.Sprintf("%s:/src/f%02d", loop, i)), 0)
	}
	if got := mid - allocated(t, backing); got < 4<<20-256<<10 {
		t.Fatalf("async on %s gave back %d bytes of 4 MiB freed", loop, got)
	}
	must(t, run(t, dir, "fsck.ddfs", "--check-data", loop), 0)
}
