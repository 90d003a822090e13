package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// foreignTree is the host tree the foreign images are built from: the
// oracle every command's output is compared with.
func foreignTree(t *testing.T) string {
	src := filepath.Join(t.TempDir(), "src")
	files := map[string]string{"a.txt": "alpha\n", "dir/b.bin": strings.Repeat("b", 70000), "dir/sub/c": "", "dir/sp ace": "s\n"}
	for p, b := range files {
		full := filepath.Join(src, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(src, "a.txt"), 0o750|os.ModeSetuid)
	os.Lchown(filepath.Join(src, "dir/b.bin"), 1001, 1002)
	os.Symlink("../a.txt", filepath.Join(src, "dir/link"))
	os.Symlink("/dir/sub", filepath.Join(src, "abs"))
	return src
}

func buildExt4(t *testing.T, src string) string {
	img := filepath.Join(t.TempDir(), "root.ext4")
	out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-O", "metadata_csum", "-L", "rootfs",
		"-U", "0b5a6bcb-7c4e-4b9e-9a0f-3e0e5f0a1b2c", "-E", "root_owner=0:0", "-d", src, img, "8M").CombinedOutput()
	if err != nil {
		t.Skipf("mke2fs: %v %s", err, out)
	}
	return img
}

func ddfsRun(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return out.String(), errb.String(), code
}

// TestForeignLsStatCat: ls --json -R, stat and cat of an ext4 image say
// what the source tree holds.
func TestForeignLsStatCat(t *testing.T) {
	src := foreignTree(t)
	img := buildExt4(t, src)
	out, errs, code := ddfsRun("ls", "--json", "-R", img+":/")
	if code != 0 {
		t.Fatalf("ls: %d %s", code, errs)
	}
	var ents []statJSON
	if err := json.Unmarshal([]byte(out), &ents); err != nil {
		t.Fatal(err)
	}
	got := map[string]statJSON{}
	for _, e := range ents {
		if !strings.HasPrefix(string(e.Path), "/lost+found") {
			got[string(e.Path)] = e
		}
	}
	want := 0
	filepath.Walk(src, func(hp string, fi os.FileInfo, err error) error {
		if hp == src {
			return nil
		}
		want++
		p := "/" + filepath.ToSlash(strings.TrimPrefix(hp, src+"/"))
		e, ok := got[p]
		if !ok {
			t.Errorf("ls -R misses %s", p)
			return nil
		}
		st := fi.Sys().(*syscall.Stat_t)
		if e.Type != modeType(st.Mode) || e.Mode != octal(st.Mode) || e.UID != st.Uid || e.GID != st.Gid || (!fi.IsDir() && e.Size != uint64(fi.Size())) {
			t.Errorf("%s: %+v, want type %s mode %s owner %d:%d size %d", p, e, modeType(st.Mode), octal(st.Mode), st.Uid, st.Gid, fi.Size())
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(hp)
			if string(e.Target) != target {
				t.Errorf("%s: target %q, want %q", p, e.Target, target)
			}
		}
		if e.Mtime != fi.ModTime().UTC().Truncate(1e9).Format("2006-01-02T15:04:05Z07:00") && fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s: mtime %s, want %v", p, e.Mtime, fi.ModTime().UTC())
		}
		return nil
	})
	if len(got) != want {
		t.Errorf("ls -R lists %d entries, the tree has %d", len(got), want)
	}
	for p, host := range map[string]string{"/a.txt": "a.txt", "/dir/b.bin": "dir/b.bin", "/dir/link": "a.txt", "/abs/../../a.txt": "a.txt", "/abs/c": "dir/sub/c"} {
		out, errs, code := ddfsRun("cat", img+":"+p)
		wantb, _ := os.ReadFile(filepath.Join(src, host))
		if code != 0 || out != string(wantb) {
			t.Errorf("cat %s: %d %q (%d bytes), want %d bytes", p, code, errs, len(out), len(wantb))
		}
	}
	out, _, code = ddfsRun("ls", "-l", img+":/dir")
	if code != 0 || !strings.Contains(out, "-rw-r--r-- 1 1001 1002 70000 ") || !strings.Contains(out, "link -> ../a.txt") {
		t.Errorf("ls -l:\n%s", out)
	}
	out, _, code = ddfsRun("stat", img+":/a.txt")
	if code != 0 || !strings.Contains(out, "Access: (4750)") {
		t.Errorf("stat:\n%s", out)
	}
	_, errs, code = ddfsRun("cat", img+":/nosuch")
	if code != 1 || errs != "ddfs: cat: "+img+":/nosuch: No such file or directory\n" {
		t.Errorf("cat of a missing file: %d %q", code, errs)
	}
	out, _, code = ddfsRun("info", "--json", img)
	if code != 0 || !strings.Contains(out, `"type": "ext4"`) || !strings.Contains(out, `"label": "rootfs"`) || !strings.Contains(out, `"uuid": "0b5a6bcb-7c4e-4b9e-9a0f-3e0e5f0a1b2c"`) {
		t.Errorf("info --json:\n%s", out)
	}
}

func octal(m uint32) string { return fmt.Sprintf("%04o", m&0o7777) }

// TestForeignWritesRefused: a command that would change a foreign image
// fails with EROFS naming its format, and leaves its bytes alone.
func TestForeignWritesRefused(t *testing.T) {
	img := buildExt4(t, foreignTree(t))
	before, _ := os.ReadFile(img)
	for _, args := range [][]string{{"touch", img + ":/x"}, {"rm", img + ":/a.txt"}, {"mkdir", img + ":/d"}, {"cp", "/etc/hostname", img + ":/"}} {
		_, errs, code := ddfsRun(args...)
		if code != 1 || !strings.Contains(errs, "ext4 image: read-only file system") {
			t.Errorf("%v: %d %q", args, code, errs)
		}
	}
	_, errs, code := ddfsRun("xattr", "list", img+":/a.txt")
	if code != 1 || !strings.Contains(errs, "xattr does not read foreign images yet") {
		t.Errorf("xattr list: %d %q", code, errs)
	}
	if after, _ := os.ReadFile(img); !bytes.Equal(before, after) {
		t.Error("the image changed")
	}
}

// TestForeignCopyOut: cp -a out of an ext4 image gives the source tree
// back (names, types, modes, owners, sizes, bytes, targets, mtimes).
func TestForeignCopyOut(t *testing.T) {
	src := foreignTree(t)
	img := buildExt4(t, src)
	out := filepath.Join(t.TempDir(), "out")
	if _, errs, code := ddfsRun("cp", "-a", img+":/", out); code != 0 {
		t.Fatalf("cp -a: %d %s", code, errs)
	}
	os.RemoveAll(filepath.Join(out, "lost+found"))
	if a, b := treeList(t, src), treeList(t, out); a != b {
		t.Errorf("copied tree differs:\n%s\nwant\n%s", b, a)
	}
}

// treeList is an mtree-like line per entry.
func treeList(t *testing.T, root string) string {
	var lines []string
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		line := strings.TrimPrefix(p, root) + " " + fi.Mode().String() + " " + octal(st.Mode) + " " + itoa(int(st.Uid)) + ":" + itoa(int(st.Gid))
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			line += " " + itoa(len(b)) + " " + itoa(int(fi.ModTime().Unix())) + " " + string(b[:min(len(b), 16)])
		}
		lines = append(lines, line)
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestForeignCopyOutConfined: a symlink already in the destination that
// leads out of it is not followed: nothing is written outside, the entry
// is named on stderr, exit 1.
func TestForeignCopyOutConfined(t *testing.T) {
	img := buildExt4(t, foreignTree(t))
	outside, out := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(out, "dir")); err != nil {
		t.Fatal(err)
	}
	_, errs, code := ddfsRun("cp", "-r", img+":/", out)
	if code != 1 || !strings.Contains(errs, "ddfs: cp: copy "+img+":/dir: not copied to ") {
		t.Errorf("cp -r over an escaping symlink: %d %q", code, errs)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("cp wrote %d entries outside its destination", len(ents))
	}
	if b, err := os.ReadFile(filepath.Join(out, "a.txt")); err != nil || string(b) != "alpha\n" {
		t.Errorf("the other entries were not copied: %v", err)
	}
}

// TestForeignPartition: disk.img@N reads partition N of a GPT disk, and
// info lists the partitions with what each holds.
func TestForeignPartition(t *testing.T) {
	if _, err := exec.LookPath("sgdisk"); err != nil {
		t.Skip("sgdisk not installed (apt-get install -y gdisk)")
	}
	src := foreignTree(t)
	fs := buildExt4(t, src)
	disk := filepath.Join(t.TempDir(), "disk.img")
	b, _ := os.ReadFile(fs)
	os.WriteFile(disk, make([]byte, 24<<20), 0o644)
	if out, err := exec.Command("sgdisk", "-n", "1:2048:+2M", "-n", "2:0:+10M", "-c", "2:root", disk).CombinedOutput(); err != nil {
		t.Fatalf("sgdisk: %v %s", err, out)
	}
	f, _ := os.OpenFile(disk, os.O_WRONLY, 0)
	f.WriteAt(b, 6144*512) // partition 2 starts after 2048 + 4096 sectors
	f.Close()
	out, errs, code := ddfsRun("info", disk)
	if code != 0 || !strings.Contains(out, "type:         gpt") || !strings.Contains(out, "  2  start 3145728  size 10.00MiB") || !strings.Contains(out, "ext4  name root") {
		t.Errorf("info: %d %s\n%s", code, errs, out)
	}
	out, errs, code = ddfsRun("cat", disk+"@2:/a.txt")
	if code != 0 || out != "alpha\n" {
		t.Errorf("cat disk.img@2:/a.txt: %d %q %s", code, out, errs)
	}
	_, errs, code = ddfsRun("ls", disk+":/")
	if code != 1 || !strings.Contains(errs, "name a partition as IMAGE@N") {
		t.Errorf("ls of a partitioned disk: %d %q", code, errs)
	}
}
