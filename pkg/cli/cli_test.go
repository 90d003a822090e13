package cli

import (
	"bytes"
	"errors"
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

// A CodeError sets the code; without Err it prints nothing (diff: 1 when
// files differ), with one it prints the line as any error.
func TestReportCodeError(t *testing.T) {
	var b bytes.Buffer
	if code := Report(&b, "ddfs: diff", &CodeError{Code: 1}); code != 1 || b.Len() != 0 {
		t.Fatalf("silent: exit %d, %q", code, b.String())
	}
	if code := Report(&b, "ddfs: diff", &CodeError{Code: 2, Err: errors.New("x: bad")}); code != 2 || b.String() != "ddfs: diff: x: bad\n" {
		t.Fatalf("with err: exit %d, %q", code, b.String())
	}
}
