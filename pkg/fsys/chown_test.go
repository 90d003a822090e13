package fsys

import (
	"errors"
	"syscall"
	"testing"
)

// TestChownClearsSetID: Chown does what chown(2) does on Linux: a
// non-directory loses set-user-ID, set-group-ID when group-executable
// (kept without group execute: mandatory locking) and its capabilities,
// even when the ids do not change; a directory keeps all of them.
func TestChownClearsSetID(t *testing.T) {
	f, _ := newTestFS(t, 256<<20, 1)
	uid, gid := uint32(1000), uint32(100)
	for _, c := range []struct {
		name       string
		dir        bool
		mode, want uint32
		uid, gid   *uint32
	}{
		{"suid-sgid-gx", false, 0o6755, 0o755, &uid, &gid},
		{"sgid-no-gx", false, 0o6745, 0o2745, &uid, nil},
		{"group-only", false, 0o2711, 0o711, nil, &gid},
		{"same-ids", false, 0o4755, 0o755, new(uint32), new(uint32)},
		{"sticky", false, 0o1755, 0o1755, &uid, &gid},
		{"dir", true, 0o7755, 0o7755, &uid, &gid},
	} {
		p := "/" + c.name
		var in *Inode
		var err error
		if c.dir {
			in, err = f.Mkdir(p, Attr{Mode: c.mode})
		} else {
			in, err = f.Create(p, Attr{Mode: c.mode})
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range []string{capabilityXattr, "user.keep"} {
			if err := f.SetXattr(in, x, []byte{1, 2, 3}); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Chown(in, c.uid, c.gid); err != nil {
			t.Fatal(err)
		}
		got, err := f.Resolve(p, false)
		if err != nil {
			t.Fatal(err)
		}
		if m := got.Mode & 0o7777; m != c.want {
			t.Errorf("%s: chown left mode %04o, want %04o", c.name, m, c.want)
		}
		if c.uid != nil && got.UID != *c.uid || c.gid != nil && got.GID != *c.gid {
			t.Errorf("%s: owner %d:%d", c.name, got.UID, got.GID)
		}
		_, capErr := f.GetXattr(got, capabilityXattr)
		if kept := capErr == nil; kept != c.dir {
			t.Errorf("%s: capabilities kept %v (%v), want %v", c.name, kept, capErr, c.dir)
		} else if !c.dir && !errors.Is(capErr, syscall.ENODATA) {
			t.Errorf("%s: capabilities: %v, want ENODATA", c.name, capErr)
		}
		if _, err := f.GetXattr(got, "user.keep"); err != nil {
			t.Errorf("%s: user.keep: %v", c.name, err)
		}
	}
}
