package e2e

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExport: ddfs export writes squashfs and ISO 9660 images of a ddfs
// tree that the formats' own tools (unsquashfs, xorriso) extract to the
// tree's files byte for byte; OUT existing is refused and left alone; a
// failed export leaves no file.
func TestExport(t *testing.T) {
	for _, tool := range []string{"unsquashfs", "xorriso"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	big := make([]byte, 700000)
	rng := rand.New(rand.NewPCG(4, 1))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	for p, b := range map[string][]byte{"a.txt": []byte("alpha\n"), "d/big.bin": big, "d/e/empty": nil, "d/e/f": []byte("f\n"),
		"efi/EFI/BOOT/BOOTX64.EFI": big[:500000], "efi/A Long Name, Mixed Case.txt": []byte("fat\n"), "efi/empty": nil, "efi/EFI/BOOT/grub.cfg": []byte("set timeout=0\n")} {
		os.MkdirAll(filepath.Join(src, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(src, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../a.txt", filepath.Join(src, "d/link")); err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-r", src, "x.img"), 0)
	for _, c := range []struct{ typ, out, extract string }{
		{"squashfs", "x.squashfs", "unsquashfs -q -d out-squashfs x.squashfs"},
		{"iso9660", "x.iso", "xorriso -osirrox on -indev x.iso -extract / out-iso9660 2>/dev/null"},
	} {
		if r := must(t, run(t, dir, "ddfs", "export", "x.img:/", c.out, "--type", c.typ), 0); !strings.Contains(r.stdout, "read back and equal") {
			t.Fatalf("%s: %q", c.typ, r.stdout)
		}
		cmd := exec.Command("sh", "-c", c.extract)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", c.extract, err, out)
		}
		extractedAs(t, src, filepath.Join(dir, "out-"+c.typ))
		if r := must(t, run(t, dir, "ddfs", "export", "x.img:/", c.out, "--type", c.typ), 1); !strings.Contains(strings.ToLower(r.stderr), "file exists") {
			t.Fatalf("%s over an existing file: %q", c.typ, r.stderr)
		}
	}
	exportFAT(t, dir, src)
	must(t, run(t, dir, "ddfs", "export", "x.img:/a.txt", "not.iso", "--type", "iso9660"), 1)
	if _, err := os.Stat(filepath.Join(dir, "not.iso")); err == nil {
		t.Fatal("a failed export left its file")
	}
}

// exportFAT: the symlink-free subtree exports as FAT32 that fsck.vfat
// finds clean and mtools extracts to the source's names and bytes; the
// whole tree, which holds a symlink, is refused naming it, leaving no file.
func exportFAT(t *testing.T, dir, src string) {
	t.Helper()
	for _, tool := range []string{"fsck.vfat", "mcopy"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	must(t, run(t, dir, "ddfs", "export", "x.img:/efi", "x.fat", "--type", "fat32", "--label", "EFI", "--size", "80M"), 0)
	if fi, err := os.Stat(filepath.Join(dir, "x.fat")); err != nil || fi.Size() != 80<<20 {
		t.Fatalf("x.fat: %v %v, want 80 MiB", fi, err)
	}
	os.Mkdir(filepath.Join(dir, "out-fat32"), 0o755)
	for _, c := range []string{"fsck.vfat -n x.fat", "MTOOLS_SKIP_CHECK=1 mcopy -s -n -i x.fat '::/*' out-fat32/"} {
		cmd := exec.Command("sh", "-c", c)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", c, err, out)
		}
	}
	extractedAs(t, filepath.Join(src, "efi"), filepath.Join(dir, "out-fat32"))
	// FSInfo's free-cluster count (sector 1, byte 488) is what fsck.fat counts.
	cmd := exec.Command("fsck.vfat", "-n", "x.fat")
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput()
	var files, used, total uint32
	if _, err := fmt.Sscanf(string(out[bytes.LastIndex(out, []byte("x.fat: ")):]), "x.fat: %d files, %d/%d clusters", &files, &used, &total); err != nil {
		t.Fatalf("fsck.vfat said %q: %v", out, err)
	}
	img, err := os.ReadFile(filepath.Join(dir, "x.fat"))
	if err != nil || binary.LittleEndian.Uint32(img[512+488:]) != total-used {
		t.Fatalf("FSInfo free count %d, fsck.fat counts %d free (%v)", binary.LittleEndian.Uint32(img[512+488:]), total-used, err)
	}
	r := must(t, run(t, dir, "ddfs", "export", "x.img:/", "all.fat", "--type", "fat32"), 1)
	if !strings.Contains(r.stderr, "/d/link") || !strings.Contains(r.stderr, "symlink") {
		t.Fatalf("a tree with a symlink as FAT: %q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "all.fat")); err == nil {
		t.Fatal("a refused FAT export left its file")
	}
}

// extractedAs requires dir b to hold a's names, symlink targets and bytes.
func extractedAs(t *testing.T, a, b string) {
	t.Helper()
	n := 0
	filepath.Walk(a, func(p string, fi os.FileInfo, err error) error {
		rel, _ := filepath.Rel(a, p)
		q := filepath.Join(b, rel)
		gi, gerr := os.Lstat(q)
		switch {
		case gerr != nil:
			t.Errorf("%s: %v", rel, gerr)
		case fi.Mode().Type() != gi.Mode().Type():
			t.Errorf("%s: type %v, want %v", rel, gi.Mode().Type(), fi.Mode().Type())
		case fi.Mode()&os.ModeSymlink != 0:
			ta, _ := os.Readlink(p)
			tb, _ := os.Readlink(q)
			if ta != tb {
				t.Errorf("%s: target %q, want %q", rel, tb, ta)
			}
		case fi.Mode().IsRegular():
			wa, _ := os.ReadFile(p)
			wb, _ := os.ReadFile(q)
			if !bytes.Equal(wa, wb) {
				t.Errorf("%s: %d bytes differ from %d", rel, len(wb), len(wa))
			}
		}
		n++
		return nil
	})
	if n < 7 {
		t.Errorf("compared %d entries", n)
	}
}
