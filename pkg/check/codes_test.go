package check

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// TestCodesStable pins the code table: a code that is renamed, dropped or
// moved to another pass or fix level breaks scripts that match it, so it
// must show up in review as a change of testdata/codes.golden (go test
// -run TestCodesStable -update adds new codes).
func TestCodesStable(t *testing.T) {
	var b strings.Builder
	name := regexp.MustCompile(`^[A-Z][A-Z0-9_]+$`)
	for _, ci := range Codes() {
		if !name.MatchString(string(ci.Code)) || ci.Description == "" || passOrder[ci.Pass] == 0 && ci.Pass != PassSuper {
			t.Errorf("bad code entry %+v", ci)
		}
		fmt.Fprintf(&b, "%s %s %s\n", ci.Code, ci.Pass, ci.Fix)
	}
	const golden = "testdata/codes.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Fatalf("the code table changed; if that is intended, run with -update and review the diff:\n%s", b.String())
	}
	if len(Codes()) < 80 {
		t.Fatalf("%d codes", len(Codes()))
	}
}

// TestCodeInfo: every code knows its pass and its fix level, and the mode
// rules follow fsck(8): -n fixes nothing, -p only preen fixes.
func TestCodeInfo(t *testing.T) {
	for _, ci := range Codes() {
		got, ok := ci.Code.Info()
		if !ok || got.Pass != ci.Pass {
			t.Fatalf("%s: %+v", ci.Code, got)
		}
		if ModeCheck.allows(ci.fix) || ModePreen.allows(ci.fix) != (ci.fix == FixPreen) || ModeRepair.allows(ci.fix) != (ci.fix != FixNone) {
			t.Fatalf("%s: fix %v", ci.Code, ci.fix)
		}
	}
	if _, ok := Code("NO_SUCH").Info(); ok {
		t.Fatal("unknown code known")
	}
}

// TestCodesInReadme keeps the README's code table equal to Codes() (-update
// rewrites it).
func TestCodesInReadme(t *testing.T) {
	const readme = "../../README.md"
	const begin, end = "<!-- codes:begin -->\n", "<!-- codes:end -->"
	var b strings.Builder
	b.WriteString("| code | pass | fix | what |\n|---|---|---|---|\n")
	for _, ci := range Codes() {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", ci.Code, ci.Pass, ci.Fix, ci.Description)
	}
	src, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("README has no %q ... %q markers", begin, end)
	}
	if got := s[i+len(begin) : j]; got != b.String() {
		if !*update {
			t.Fatalf("README code table is stale: run go test ./pkg/check -run TestCodesInReadme -update")
		}
		if err := os.WriteFile(readme, []byte(s[:i+len(begin)]+b.String()+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
