package transfer

import (
	"archive/tar"
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestTarInMakesParents: an archive without entries for the directories
// above its files (tar -cf x.tar src/sub/a.txt) extracts as GNU tar does:
// the missing parents are made (0755, the extracting user or the forced
// owner), and an entry for one of them later in the archive sets its
// mode, owner, times and xattrs.
func TestTarInMakesParents(t *testing.T) {
	archive := tarOf(t,
		&tar.Header{Name: "src/sub/a.txt", Typeflag: tar.TypeReg, Mode: 0o640, ModTime: at(4000)},
		&tar.Header{Name: "src/sub/", Typeflag: tar.TypeDir, Mode: 0o700, Uid: 7, Gid: 8, ModTime: at(1000),
			PAXRecords: map[string]string{xattrPAX + "user.k": "v"}},
		&tar.Header{Name: "/lone/b", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: at(5000)},
		&tar.Header{Name: "hard", Typeflag: tar.TypeLink, Linkname: "lone/b"},
	)
	for _, target := range []string{"/", "/made"} {
		f := newFS(t, 256<<20)
		if err := TarIn(f, bytes.NewReader(archive), target, Options{}); err != nil {
			t.Fatalf("into %s: %v", target, err)
		}
		at := func(p string) string { return strings.TrimSuffix(target, "/") + "/" + p }
		for _, p := range []string{"src/sub/a.txt", "lone/b", "hard"} {
			if got := readFile(t, f, at(p)); string(got) != "data" {
				t.Errorf("%s: %q", at(p), got)
			}
		}
		uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
		for _, p := range []string{"src", "lone"} {
			if m, u, g, _ := attrsOf(t, f, at(p)); m != 0o755 || u != uid || g != gid {
				t.Errorf("%s (no entry): mode %o owner %d:%d, want 755 %d:%d", at(p), m, u, g, uid, gid)
			}
		}
		if m, u, g, mt := attrsOf(t, f, at("src/sub")); m != 0o700 || u != 7 || g != 8 || mt != 1000 {
			t.Errorf("%s: mode %o owner %d:%d mtime %d, want its later entry's 700 7:8 1000", at("src/sub"), m, u, g, mt)
		}
		in, err := f.Resolve(at("src/sub"), false)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := f.GetXattr(in, "user.k"); err != nil || string(v) != "v" {
			t.Errorf("%s: xattr user.k %q, %v", at("src/sub"), v, err)
		}
		fsckClean(t, f)
	}
	// mkfs --all-root: made parents take the forced owner too.
	f := newFS(t, 256<<20)
	zero := uint32(0)
	forced := uint32(1234)
	if err := TarIn(f, bytes.NewReader(archive), "/", Options{ForceUID: &forced, ForceGID: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, u, g, _ := attrsOf(t, f, "/src"); u != forced || g != 0 {
		t.Errorf("/src with a forced owner: %d:%d, want %d:0", u, g, forced)
	}
}
