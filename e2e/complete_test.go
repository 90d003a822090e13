package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCompletion: every tool writes bash, zsh and fish scripts; after
// "IMG:" ddfs completes the entries of the directory typed so far, read
// from the image without changing a byte of it.
func TestCompletion(t *testing.T) {
	dir := t.TempDir()
	for _, tool := range []string{"ddfs", "mkfs.ddfs", "fsck.ddfs", "trimtool", "dedupe-tool"} {
		for _, sh := range []string{"bash", "zsh", "fish"} {
			if r := must(t, run(t, dir, tool, "completion", sh), 0); !strings.Contains(r.stdout, tool) {
				t.Errorf("%s completion %s: %.80q", tool, sh, r.stdout)
			}
		}
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "-p", "d.img:/x/sub", "d.img:/.hid"), 0)
	must(t, run(t, dir, "ddfs", "touch", "d.img:/x/h"), 0)
	img := filepath.Join(dir, "d.img")
	before, _ := os.ReadFile(img)
	st0, _ := os.Stat(img)
	for typed, want := range map[string][]string{
		"d.img:/":     {"d.img:/x/"},
		"d.img:":      {"d.img:x/"},
		"d.img:/x/":   {"d.img:/x/h", "d.img:/x/sub/"},
		"d.img:x/s":   {"d.img:x/sub/"},
		"d.img:/.":    {"d.img:/.hid/"},
		"d.img:/nope": nil,
	} {
		r := must(t, run(t, dir, "ddfs", "__complete", "ls", typed), 0)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if got := lines[:len(lines)-1]; !slices.Equal(got, want) && !(len(got) == 0 && want == nil) {
			t.Errorf("complete %q: %q, want %q", typed, got, want)
		}
	}
	after, _ := os.ReadFile(img)
	if st1, _ := os.Stat(img); !bytes.Equal(before, after) || !st1.ModTime().Equal(st0.ModTime()) {
		t.Errorf("completion changed the image")
	}

	// The bash script as a shell runs it (bash-completion's word splitter
	// replaced by its documented result for -n =:).
	script := must(t, run(t, dir, "ddfs", "completion", "bash"), 0).stdout
	sh := script + `
_get_comp_words_by_ref() { cur="d.img:/x/"; prev=ls; words=(ddfs ls "d.img:/x/"); cword=2; }
COMP_LINE="ddfs ls d.img:/x/"; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(ddfs ls d.img : /x/); COMP_CWORD=4
__start_ddfs
printf '%s\n' "${COMPREPLY[@]}"
`
	cmd := exec.Command("bash", "-c", sh)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+binDir+":"+os.Getenv("PATH"))
	out, err := cmd.Output()
	if got := strings.Fields(string(out)); err != nil || !slices.Equal(got, []string{"/x/h", "/x/sub/"}) {
		t.Errorf("bash completion: %q, %v", got, err)
	}
}
