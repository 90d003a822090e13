package cli

import (
	"bytes"
	"testing"
)

// The usage hint names the real command (review: it said 'ddfs: --help').
func TestReportUsageHint(t *testing.T) {
	for prog, want := range map[string]string{
		"ddfs: cp":         "Try 'ddfs cp --help' for more information.\n",
		"dedupe-tool: run": "Try 'dedupe-tool run --help' for more information.\n",
		"ddfs":             "Try 'ddfs --help' for more information.\n",
	} {
		var b bytes.Buffer
		if code := Report(&b, prog, Usagef("bad")); code != ExitUsage {
			t.Fatalf("%s: exit %d", prog, code)
		}
		if got := b.String(); got != prog+": bad\n"+want {
			t.Errorf("%s: %q", prog, got)
		}
	}
}
