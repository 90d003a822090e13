package main

import (
	"os/exec"
	"testing"
)

// TestShellQuoteRoundTrip feeds every quoted name to bash's printf %s and
// wants the exact bytes back, and no control byte left in the quoted form.
func TestShellQuoteRoundTrip(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	names := []string{"plain", "a b", "it's", "\x1b[31mred", "tab\there", "new\nline", "\xff\xfe", "caf\u00e9", "#x", "x#", "~u", "a~",
		"$(rm -rf /)", "'", "''", "\x7f", "mix'\x01'x", "\u0085next", "back\\slash", "semi;colon", "star*", "q?", "[a]",
		"a b'c", "#it's", "{", "a{b", "a=b", "it's@"}
	for _, n := range names {
		q := shellQuote(n)
		for i := 0; i < len(q); i++ {
			if q[i] < 0x20 || q[i] == 0x7f {
				t.Errorf("shellQuote(%q) = %q keeps a control byte", n, q)
			}
		}
		out, err := exec.Command(bash, "-c", "printf %s "+q).Output()
		if err != nil {
			t.Fatalf("bash printf %s: %v", q, err)
		}
		if string(out) != n {
			t.Errorf("shellQuote(%q) = %s reads back as %q", n, q, out)
		}
	}
	// As GNU ls 9.1 prints them on a terminal here (ls -1, C.UTF-8).
	for n, want := range map[string]string{"plain": "plain", "a b": "'a b'", "\x1b[31mred": `$'\033''[31mred'`,
		"it's": `"it's"`, "a b'c": `"a b'c"`, "#it's": `"#it's"`, "it's@": `"it's@"`, "\u00e9's": "\"\u00e9's\"",
		"it's $x": `'it'\''s $x'`, "n'$m": `'n'\''$m'`, "it's#": `'it'\''s#'`, "it's=": `'it'\''s='`, "it's?": `'it'\''s?'`,
		"it's{": `'it'\''s{'`, "it's~": `'it'\''s~'`, "a'!b": `'a'\''!b'`, `a'\\b`: `'a'\''\\b'`, "a'`b": `'a'\''` + "`" + `b'`,
		"a{b": "a{b", "a}": "a}", "{": "'{'", "}": "'}'", "a=b": "'a=b'", "a%b": "a%b", "a@b": "a@b", "m#h": "m#h", "~t": "'~t'",
	} {
		if got := shellQuote(n); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", n, got, want)
		}
	}
}
