package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestStatsEveryTool: every tool prints per-device I/O with --stats (one
// "io: devid N ..." line per device on stderr, with a modeled time), and
// the JSON reports carry it as "io" when asked.
func TestStatsEveryTool(t *testing.T) {
	dir := t.TempDir()
	line := regexp.MustCompile(`(?m)^io: devid [12] \S+: reads \d+ .*writes \d+ .*flushes \d+, discards \d+ .*seeks \d+; modeled [0-9.]+ s$`)
	lines := func(name string, r result) {
		t.Helper()
		if n := len(line.FindAllString(r.stderr, -1)); n != 2 {
			t.Errorf("%s --stats: %d io lines for 2 devices in %q", name, n, r.stderr)
		}
	}
	lines("mkfs.ddfs", must(t, run(t, dir, "mkfs.ddfs", "-q", "--stats", "-b", "128M", "-d", "raid1", "-m", "raid1", "a.img", "b.img"), 0))
	lines("ddfs mkdir", must(t, run(t, dir, "ddfs", "mkdir", "--stats", "a.img:/d"), 0))
	lines("ddfs ls", must(t, run(t, dir, "ddfs", "ls", "--stats", "a.img:/"), 0))
	lines("fsck.ddfs", must(t, run(t, dir, "fsck.ddfs", "--stats", "a.img"), 0))
	lines("trimtool", must(t, run(t, dir, "trimtool", "--stats", "a.img"), 0))
	lines("dedupe-tool enable", must(t, run(t, dir, "dedupe-tool", "enable", "--stats", "a.img"), 0))
	lines("dedupe-tool status", must(t, run(t, dir, "dedupe-tool", "status", "--stats", "a.img"), 0))
	for _, c := range [][]string{
		{"trimtool", "--stats", "--json", "a.img"},
		{"dedupe-tool", "status", "--stats", "--json", "a.img"},
		{"fsck.ddfs", "--json", "a.img"},
	} {
		var out struct {
			IO []struct {
				DevID  uint64 `json:"devid"`
				Reads  uint64 `json:"reads"`
				Writes uint64 `json:"writes"`
			} `json:"io"`
		}
		r := run(t, dir, c[0], c[1:]...)
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.IO) != 2 || out.IO[0].Reads == 0 {
			t.Errorf("%s: io in JSON: %+v, %v (%q)", strings.Join(c, " "), out.IO, err, r.stdout)
		}
	}
}
