package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/attrspec"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/fsys"
)

func uid() uint32 { return uint32(os.Getuid()) }
func gid() uint32 { return uint32(os.Getgid()) }

// umask is the process's file mode creation mask.
func umask() uint32 {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return uint32(m)
}

// applyFn changes one inode (at image path p).
type applyFn func(f *fsys.FS, in *fsys.Inode, p string) error

// walkOpts say how chmod/chown/touch reach the inodes they change.
type walkOpts struct {
	deref     bool // operands that are symlinks: change the target (not -h)
	recursive bool // -R: every inode below a directory operand
	// linksInTree: under -R, change a symlink met in the tree itself
	// (chown, as GNU's -P) instead of skipping it (chmod).
	linksInTree bool
	skipMissing bool // touch -c: a missing operand is no error
	literal     bool // touch: operands name what to make, never patterns
}

// changeEach applies the change build makes (once the image is open: names
// come from its /etc/passwd) to every IMAGE:PATH operand, in one
// transaction. Entries fsck would flag are skipped and named at the end.
func changeEach(of *openFlags, args []string, o walkOpts, build func(im *image) (applyFn, error)) error {
	if len(args) == 0 {
		return usageErr("missing IMAGE:PATH")
	}
	img, paths, err := imageOperands(args)
	if err != nil {
		return err
	}
	im, err := of.openImage(img, true)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		im.f.Abort()
		im.close()
		return im.err(err)
	}
	fn, err := build(im)
	if err != nil {
		return fail(err)
	}
	var bad fsys.Refused
	if !o.literal {
		if paths, err = expandPaths(im, paths, &bad); err != nil {
			return fail(err)
		}
	}
	for _, p := range paths {
		in, err := im.f.Resolve(p, o.deref)
		if o.skipMissing && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fail(err)
		}
		if err := changeTree(im.f, in, p, o, fn, &bad, true); err != nil {
			return fail(err)
		}
	}
	if err := im.close(); err != nil {
		return err
	}
	return im.err(bad.Done(nil))
}

func changeTree(f *fsys.FS, in *fsys.Inode, p string, o walkOpts, fn applyFn, bad *fsys.Refused, operand bool) error {
	if in.IsSymlink() && !operand && !o.linksInTree {
		return nil
	}
	if err := fn(f, in, p); err != nil {
		return pathErrOf("setattr", p, err)
	}
	if !o.recursive || !in.IsDir() {
		return nil
	}
	kids, err := f.Children(in)
	if err := bad.Note(p, err); err != nil {
		return err
	}
	for _, k := range kids {
		if err := changeTree(f, k.Inode, path.Join(p, k.Entry.Name), o, fn, bad, false); err != nil {
			return err
		}
	}
	return nil
}

// accountsOf reads the image's own /etc/passwd and /etc/group, so names
// mean what they mean inside the image; without them ids are numbers.
func accountsOf(f *fsys.FS) (*attrspec.Accounts, error) {
	read := func(p string) ([]byte, error) {
		b, err := readSmall(f, p, 16<<20)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return b, err
	}
	pw, err := read("/etc/passwd")
	if err != nil {
		return nil, err
	}
	gr, err := read("/etc/group")
	if err != nil {
		return nil, err
	}
	return attrspec.ParseAccounts(pw, gr), nil
}

// readSmall reads a whole regular file of at most max bytes.
func readSmall(f *fsys.FS, p string, max uint64) ([]byte, error) {
	in, err := f.Resolve(p, true)
	if err != nil {
		return nil, err
	}
	if !in.IsRegular() {
		return nil, pathErr("read", p, syscall.EINVAL)
	}
	if in.Size > max {
		return nil, pathErr("read", p, syscall.EFBIG)
	}
	b := make([]byte, in.Size)
	n, err := f.ReadAt(in, b, 0)
	if err != nil && n < len(b) {
		return nil, pathErrOf("read", p, err)
	}
	return b[:n], nil
}

const namesHelp = `OWNER and GROUP are names from the image's own /etc/passwd and /etc/group
when it has them, else numbers; +N is always a number.`

func newChmodCmd() *cobra.Command {
	c, fl, of := newCmd("chmod [-R] [-h] MODE IMAGE:PATH...\n\nMODE is octal (0755) or symbolic as chmod(1): [ugoa]*[+-=][rwxXst]*|[ugo], comma-separated.\nA symlink operand changes its target, with -h the link; -R skips links met below.",
		"change permission bits", "  ddfs chmod 0755 disk.img:/usr/bin/tool\n  ddfs chmod -R u+rwX,go-w disk.img:/srv\n")
	cli.NoHelpShorthand(c)
	rec := fl.BoolP("recursive", "R", false, "change directories and their contents")
	noDeref := fl.BoolP("no-dereference", "h", false, "change a symlink operand itself")
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) < 2 {
			return usageErr("want MODE IMAGE:PATH...")
		}
		m, err := attrspec.ParseMode(args[0])
		if err != nil {
			return usageErr("%v", err)
		}
		mask := umask()
		return changeEach(of, args[1:], walkOpts{deref: !*noDeref, recursive: *rec}, func(*image) (applyFn, error) {
			return func(f *fsys.FS, in *fsys.Inode, _ string) error {
				mode := m.Apply(in.Mode, in.IsDir(), mask)
				return f.SetattrInode(in, fsys.SetAttr{Mode: &mode})
			}, nil
		})
	}
	return c
}

func newChownCmd() *cobra.Command {
	c, fl, of := newCmd("chown [-R] [-h] OWNER[:GROUP] IMAGE:PATH...\n\n"+namesHelp+"\nA symlink operand changes its target, with -h the link; -R changes links met below themselves.\nAs chown(2) on Linux, a file that is not a directory loses its set-user-ID bit, its\nset-group-ID bit when group-executable, and its capabilities (security.capability).",
		"change owner and group", "  ddfs chown 0:0 disk.img:/etc/shadow\n  ddfs chown -R 1000:1000 disk.img:/home/me\n  ddfs chown root:root disk.img:/etc/passwd\n")
	cli.NoHelpShorthand(c)
	rec := fl.BoolP("recursive", "R", false, "change directories and their contents")
	noDeref := fl.BoolP("no-dereference", "h", false, "change a symlink operand itself")
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) < 2 {
			return usageErr("want OWNER[:GROUP] IMAGE:PATH...")
		}
		return changeEach(of, args[1:], walkOpts{deref: !*noDeref, recursive: *rec, linksInTree: true}, func(im *image) (applyFn, error) {
			acc, err := accountsOf(im.f)
			if err != nil {
				return nil, err
			}
			o, err := acc.ParseOwner(args[0])
			if err != nil {
				return nil, usageErr("%v", err)
			}
			return func(f *fsys.FS, in *fsys.Inode, _ string) error {
				return f.Chown(in, o.UID, o.GID)
			}, nil
		})
	}
	return c
}

func newTouchCmd() *cobra.Command {
	c, fl, of := newCmd("touch [-c] [-a|-m] [-d DATE|-t STAMP|-r REF] [-h] IMAGE:PATH...\n\nDATE: YYYY-MM-DD[ HH:MM[:SS[.N]]][ZONE] (local time without a zone), @SECONDS or now.\nSTAMP: [[CC]YY]MMDDhhmm[.ss] in local time, as GNU touch -t.\nREF: a file in the same image (IMAGE:PATH) or on the host.\nPATH is never a pattern: disk.img:/a[1] names the file a[1].",
		"create files or set their times", "  ddfs touch disk.img:/etc/stamp\n  ddfs touch -d '2024-01-02 03:04:05' disk.img:/etc/stamp\n  ddfs touch -t 202401020304.05 disk.img:/etc/stamp\n  ddfs touch -m -r disk.img:/etc/passwd disk.img:/etc/stamp\n")
	cli.NoHelpShorthand(c)
	noCreate := fl.BoolP("no-create", "c", false, "do not create missing files")
	onlyA := fl.BoolP("atime", "a", false, "change only the access time")
	onlyM := fl.BoolP("mtime", "m", false, "change only the modification time")
	date := fl.StringP("date", "d", "", "use DATE instead of now")
	stamp := fl.StringP("stamp", "t", "", "use STAMP instead of now")
	ref := fl.StringP("reference", "r", "", "use REF's times instead of now")
	noDeref := fl.BoolP("no-dereference", "h", false, "change a symlink itself, not its target")
	c.RunE = func(c *cobra.Command, args []string) error {
		if n := len(slices.DeleteFunc([]string{*date, *stamp, *ref}, func(s string) bool { return s == "" })); n > 1 {
			return usageErr("cannot use more than one of -d, -t and -r")
		}
		if *stamp != "" {
			t, err := attrspec.ParseStamp(*stamp, time.Now(), time.Local)
			if err != nil {
				return usageErr("%v", err)
			}
			*date = fmt.Sprintf("@%d", t.Unix()) // one way in: touchTimes
		}
		setA, setM := !*onlyM || *onlyA, !*onlyA || *onlyM
		return changeEachCreate(of, args, *noDeref, *noCreate, func(im *image) (applyFn, error) {
			at, mt, err := touchTimes(im, *date, *ref)
			if err != nil {
				return nil, err
			}
			a := fsys.SetAttr{}
			if setA {
				a.Atime = &at
			}
			if setM {
				a.Mtime = &mt
			}
			return func(f *fsys.FS, in *fsys.Inode, _ string) error { return f.SetattrInode(in, a) }, nil
		})
	}
	return c
}

// changeEachCreate is changeEach for touch: a missing operand is created
// (0666 less the umask, as touch(1)) unless -c.
func changeEachCreate(of *openFlags, args []string, noDeref, noCreate bool, build func(im *image) (applyFn, error)) error {
	return changeEach(of, args, walkOpts{deref: !noDeref, skipMissing: noCreate, literal: true}, func(im *image) (applyFn, error) {
		fn, err := build(im)
		if err != nil {
			return nil, err
		}
		// Create the missing operands first, in the same transaction.
		_, paths, _ := imageOperands(args)
		for _, p := range paths {
			_, err := im.f.Resolve(p, !noDeref)
			if !errors.Is(err, fs.ErrNotExist) || noCreate {
				continue
			}
			if _, err := im.f.Create(p, fsys.Attr{Mode: 0o666 &^ umask(), UID: uid(), GID: gid()}); err != nil {
				return nil, err
			}
		}
		return fn, nil
	})
}

// touchTimes are the atime and mtime touch sets: now, -d DATE or REF's.
func touchTimes(im *image, date, ref string) (at, mt format.Timespec, err error) {
	switch {
	case date != "":
		t, err := attrspec.ParseDate(date, time.Now(), time.Local)
		if err != nil {
			return at, mt, usageErr("%v", err)
		}
		ts := fsys.TimespecOf(t)
		return ts, ts, nil
	case ref != "":
		if o := parseOperand(ref); o.image != "" {
			if o.image != im.name {
				return at, mt, usageErr("-r %s: a reference in another image", ref)
			}
			in, err := im.f.Resolve(abs(o.path), true)
			if err != nil {
				return at, mt, err
			}
			return in.Atime, in.Mtime, nil
		}
		var st syscall.Stat_t
		if err := syscall.Stat(ref, &st); err != nil {
			return at, mt, fmt.Errorf("-r: %w", &fs.PathError{Op: "stat", Path: ref, Err: err})
		}
		return format.Timespec{Sec: st.Atim.Sec, Nsec: uint32(st.Atim.Nsec)}, format.Timespec{Sec: st.Mtim.Sec, Nsec: uint32(st.Mtim.Nsec)}, nil
	}
	now := im.f.Now()
	return now, now, nil
}
