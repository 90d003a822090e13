package attrspec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestModeAgainstChmod compares Apply with GNU chmod(1) itself, on files
// and directories from several starting modes, under two umasks: the
// oracle is the real tool, not a second reading of the same rules.
func TestModeAgainstChmod(t *testing.T) {
	chmod, err := exec.LookPath("chmod")
	if err != nil {
		t.Skip("no chmod(1)")
	}
	specs := []string{"0644", "00755", "755", "4755", "u+x", "u+x,go-w", "a=r", "=r", "+x", "-w", "g=u", "o=g", "u+s", "g+s", "+t", "o+t",
		"u=rwx,g=rx,o=", "a+X", "+X", "u-x+w", "go=", "ug+rw,o-rwx", "u=rw-x", "g+u", "a-s", "=", "o=rwxt", "u+st", "a=rwx"}
	starts := []uint32{0, 0o644, 0o755, 0o600, 0o7777, 0o2750, 0o4711, 0o111}
	dir := t.TempDir()
	for _, mask := range []int{0o022, 0o077} {
		old := syscall.Umask(mask)
		for si, spec := range specs {
			m, err := ParseMode(spec)
			if err != nil {
				t.Fatalf("ParseMode(%q): %v", spec, err)
			}
			// One chmod run over a file and a directory of each start.
			var paths []string
			var before []uint32
			for _, isDir := range []bool{false, true} {
				for _, start := range starts {
					p := filepath.Join(dir, fmt.Sprintf("%d-%d-%v-%o", mask, si, isDir, start))
					if isDir {
						os.Mkdir(p, 0o700)
					} else {
						os.WriteFile(p, nil, 0o600)
					}
					if err := os.Chmod(p, os.FileMode(start&0o777)|goMode(start)); err != nil {
						t.Fatal(err)
					}
					paths = append(paths, p)
					before = append(before, statMode(t, p))
				}
			}
			// chmod exits 1 when the umask kept bits from being cleared
			// ("new permissions are ..."): the modes are set all the same.
			if out, err := exec.Command(chmod, append([]string{spec}, paths...)...).CombinedOutput(); err != nil && !strings.Contains(string(out), "new permissions are") {
				t.Fatalf("chmod %s: %v %s", spec, err, out)
			}
			for i, p := range paths {
				isDir := i >= len(starts)
				want := statMode(t, p)
				if got := m.Apply(before[i], isDir, uint32(mask)); got != want {
					t.Errorf("umask %03o dir %v: %04o then %q = %04o, chmod(1) says %04o", mask, isDir, before[i], spec, got, want)
				}
			}
		}
		syscall.Umask(old)
	}
}

func goMode(m uint32) os.FileMode {
	var f os.FileMode
	if m&setUID != 0 {
		f |= os.ModeSetuid
	}
	if m&setGID != 0 {
		f |= os.ModeSetgid
	}
	if m&sticky != 0 {
		f |= os.ModeSticky
	}
	return f
}

func statMode(t *testing.T, p string) uint32 {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Mode & 0o7777
}

func TestParseModeRejects(t *testing.T) {
	for _, s := range []string{"", "8", "07777x", "17777", "u", "ugo", "u+q", "u!x", "u+x,", ",u+x", "x+u"} {
		if _, err := ParseMode(s); err == nil {
			t.Errorf("ParseMode(%q) accepted", s)
		}
	}
}
