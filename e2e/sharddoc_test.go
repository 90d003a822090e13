package e2e

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestShardDocsZeroBased: --shard I/N counts I from 0 (TestBatchShards
// holds the code to it), and so must what users read: every README line
// with a --shard I/N example says 0-based, and the --shard help of every
// tool that has one says where I starts.
func TestShardDocsZeroBased(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example := regexp.MustCompile(`--shard \d+/\d+`)
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if example.MatchString(line) {
			n++
			if _, comment, _ := strings.Cut(line, "#"); !strings.Contains(comment, "0-based") {
				t.Errorf("README: %q: say that I is 0-based", strings.TrimSpace(line))
			}
		}
	}
	if n == 0 {
		t.Error("README: no --shard I/N example")
	}
	for _, c := range [][]string{{"fsck.ddfs"}, {"trimtool"}, {"dedupe-tool", "status"}, {"ddfs", "info"}, {"ddfs", "df"}} {
		r := must(t, run(t, t.TempDir(), c[0], append(c[1:], "--help")...), 0)
		found := false
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.Contains(line, "--shard I/N") {
				found = true
				if !strings.Contains(line, "I from 0 to N-1") {
					t.Errorf("%s --help: %q: say where I starts", strings.Join(c, " "), strings.TrimSpace(line))
				}
			}
		}
		if !found {
			t.Errorf("%s --help: no --shard I/N", strings.Join(c, " "))
		}
	}
}
