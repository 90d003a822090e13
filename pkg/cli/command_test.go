package cli

import (
	"bytes"
	"errors"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// tree is a small tool: ls, ln, cp, cat and a group with one subcommand.
func tree(ran *[]string) *cobra.Command {
	root := NewRoot("tool", "a tool", "")
	MakeGroup(root)
	for _, n := range []string{"ls", "ln", "cp", "cat"} {
		c := NewCommand(n+" ARG...", "the "+n+" command", "  tool "+n+" x")
		c.Flags().BoolP("long", "l", false, "long")
		c.RunE = func(c *cobra.Command, args []string) error { *ran = append(*ran, c.Name()); return nil }
		root.AddCommand(c)
	}
	dev := NewGroup("device", "devices", "  tool device usage x")
	usage := NewCommand("usage IMAGE", "usage", "  tool device usage x")
	usage.RunE = func(c *cobra.Command, args []string) error { *ran = append(*ran, "usage"); return nil }
	dev.AddCommand(usage)
	root.AddCommand(dev)
	return root
}

func execute(args ...string) (code int, stdout, stderr string, ran []string) {
	var o, e bytes.Buffer
	code = Execute(tree(&ran), args, &o, &e)
	return code, o.String(), e.String(), ran
}

// An unknown command is a usage error (exit 2) naming the nearest ones.
func TestUnknownCommandSuggests(t *testing.T) {
	for arg, want := range map[string]string{"lss": "ls", "cpy": "cp", "cta": "cat"} {
		_, err := Run(tree(new([]string)), []string{arg}, new(bytes.Buffer), new(bytes.Buffer))
		var ue *UsageError
		if !errors.As(err, &ue) || !slices.Contains(ue.Suggestions, want) {
			t.Errorf("%s: %v (suggestions %v), want a usage error suggesting %s", arg, err, ue, want)
		}
		if code, _, _, ran := execute(arg); code != ExitUsage || len(ran) != 0 {
			t.Errorf("%s: exit %d, ran %v", arg, code, ran)
		}
	}
	_, err := Run(tree(new([]string)), []string{"device", "usag"}, new(bytes.Buffer), new(bytes.Buffer))
	if ue := (*UsageError)(nil); !errors.As(err, &ue) || !slices.Equal(ue.Suggestions, []string{"usage"}) {
		t.Errorf("device usag: %v", err)
	}
}

// `help CMD` and `CMD --help` print the command's help, not the root's;
// a nested command's --help is its own.
func TestHelpOfCommand(t *testing.T) {
	_, cpHelp, _, _ := execute("cp", "--help")
	_, helpCp, _, _ := execute("help", "cp")
	_, rootHelp, _, _ := execute("--help")
	if cpHelp != helpCp || cpHelp == rootHelp || !strings.Contains(cpHelp, "tool cp ARG...") {
		t.Errorf("help cp:\n%s\ncp --help:\n%s", helpCp, cpHelp)
	}
	_, usageHelp, _, ran := execute("device", "usage", "--help")
	_, devHelp, _, _ := execute("device", "--help")
	if usageHelp == devHelp || !strings.Contains(usageHelp, "tool device usage IMAGE") || len(ran) != 0 {
		t.Errorf("device usage --help:\n%s", usageHelp)
	}
	// "GROUP help CMD" as "TOOL help CMD": the subcommand's help, exit 0.
	code, groupHelp, _, ran := execute("device", "help", "usage")
	if code != ExitOK || groupHelp != usageHelp || len(ran) != 0 {
		t.Errorf("device help usage: exit %d, ran %v:\n%s", code, ran, groupHelp)
	}
	if code, h, _, _ := execute("device", "help"); code != ExitOK || h != devHelp {
		t.Errorf("device help: exit %d:\n%s", code, h)
	}
	_, err := Run(tree(new([]string)), []string{"device", "help", "usag"}, new(bytes.Buffer), new(bytes.Buffer))
	if ue := (*UsageError)(nil); !errors.As(err, &ue) || !slices.Equal(ue.Suggestions, []string{"usage"}) {
		t.Errorf("device help usag: %v", err)
	}
	if !strings.Contains(cpHelp, "Exit status:\n  "+DefaultExitCodes) {
		t.Errorf("no exit status in\n%s", cpHelp)
	}
}

// Exit codes: a bad flag and a missing subcommand are usage errors; the
// usage hint names the real command.
func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		prog string
	}{
		{[]string{"cp", "--bogus"}, ExitUsage, "tool cp"},
		{[]string{"device"}, ExitUsage, "tool device"},
		{[]string{"device", "usage", "-x"}, ExitUsage, "tool device usage"},
		{[]string{}, ExitUsage, "tool"},
		{[]string{"cp", "-l", "a", "b"}, ExitOK, ""},
		{[]string{"--version"}, ExitOK, ""},
	} {
		code, _, stderr, _ := execute(tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.code)
		}
		if tc.prog != "" && !strings.HasSuffix(stderr, "Try '"+tc.prog+" --help' for more information.\n") {
			t.Errorf("%v: %q does not name %s", tc.args, stderr, tc.prog)
		}
	}
}

// -h stays free on a command that takes it for something else; --help
// is still help there.
func TestNoHelpShorthand(t *testing.T) {
	root := NewRoot("tool", "a tool", "")
	MakeGroup(root)
	var human bool
	c := NewCommand("df IMAGE", "df", "  tool df x")
	NoHelpShorthand(c)
	c.Flags().BoolVarP(&human, "human-readable", "h", false, "sizes with K, M")
	c.RunE = func(*cobra.Command, []string) error { return nil }
	root.AddCommand(c)
	var o bytes.Buffer
	if code := Execute(root, []string{"df", "-h", "x"}, &o, &o); code != ExitOK || !human {
		t.Fatalf("df -h: exit %d, human %v: %s", code, human, o.String())
	}
	o.Reset()
	if code := Execute(root, []string{"df", "--help"}, &o, &o); code != ExitOK || !strings.Contains(o.String(), "tool df IMAGE") {
		t.Fatalf("df --help: exit %d: %s", code, o.String())
	}
}

func TestVersion(t *testing.T) {
	code, out, _, _ := execute("--version")
	if code != ExitOK || out != "tool "+Version()+"\n" || !strings.HasPrefix(Version(), Release) {
		t.Fatalf("--version: exit %d %q", code, out)
	}
	for _, tc := range []struct {
		settings []debug.BuildSetting
		want     string
	}{
		{nil, ""},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}}, " (rev 0123456789ab)"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}, " (rev abc, modified)"},
		{[]debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}, ""},
	} {
		if got := revision(tc.settings); got != tc.want {
			t.Errorf("revision(%v) = %q, want %q", tc.settings, got, tc.want)
		}
	}
}

// --stats means text, --stats=json JSON; anything else is a usage error.
func TestStatsFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want Stats
		code int
	}{
		{nil, "", ExitOK},
		{[]string{"--stats"}, "text", ExitOK},
		{[]string{"--stats=json"}, "json", ExitOK},
		{[]string{"--stats=text"}, "text", ExitOK},
		{[]string{"--stats=xml"}, "", ExitUsage},
	} {
		root := NewRoot("tool", "a tool", "")
		var s Stats
		StatsVar(root.Flags(), &s, "I/O")
		root.RunE = func(*cobra.Command, []string) error { return nil }
		var o bytes.Buffer
		if code := Execute(root, append(tc.args, "img"), &o, &o); code != tc.code || s != tc.want {
			t.Errorf("%v: exit %d, stats %q; want %d, %q", tc.args, code, s, tc.code, tc.want)
		}
	}
}

// A verb that is not one of a command's is a usage error naming the
// nearest verbs, those one edit away first ("sett": set, not get).
func TestVerbSuggests(t *testing.T) {
	verbs := []string{"get", "set", "list", "rm"}
	for word, want := range map[string][]string{"sett": {"set"}, "lst": {"list"}, "rmm": {"rm"}, "gte": {"get"}, "zzzz": nil} {
		var ue *UsageError
		if err := Verb(word, verbs...); !errors.As(err, &ue) || !slices.Equal(ue.Suggestions, want) {
			t.Errorf("%s: %v, want suggestions %v", word, err, want)
		}
	}
	for _, v := range verbs {
		if err := Verb(v, verbs...); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
}
