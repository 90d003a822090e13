package main

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/fsys"
)

func uid() uint32 { return uint32(os.Getuid()) }
func gid() uint32 { return uint32(os.Getgid()) }

func newTouchCmd() *cobra.Command {
	c, fl, of := newCmd("touch [-c] IMAGE:PATH...", "create files or set their times to now", "  ddfs touch disk.img:/etc/stamp\n")
	cli.NoHelpShorthand(c)
	noCreate := fl.BoolP("no-create", "c", false, "do not create missing files")
	c.RunE = func(c *cobra.Command, args []string) error {
		return setEach(of, args, func(f *fsys.FS, p string) error {
			in, err := f.Resolve(p, true)
			if errors.Is(err, fs.ErrNotExist) {
				if *noCreate {
					return nil
				}
				_, err = f.Create(p, fsys.Attr{Mode: 0o644, UID: uid(), GID: gid()})
				return err
			}
			if err != nil {
				return err
			}
			now := f.Now()
			return f.SetattrInode(in, fsys.SetAttr{Atime: &now, Mtime: &now})
		}, 0)
	}
	return c
}

func newChmodCmd() *cobra.Command {
	c, _, of := newCmd("chmod MODE IMAGE:PATH...", "change permission bits", "  ddfs chmod 0755 disk.img:/usr/bin/tool\n")
	cli.NoHelpShorthand(c)
	c.RunE = func(c *cobra.Command, args []string) error {
		return setEach(of, args, nil, 1, func(first string) (func(*fsys.FS, string) error, error) {
			m, err := strconv.ParseUint(first, 8, 32)
			if err != nil || m > 0o7777 {
				return nil, usageErr("invalid mode %q (octal, e.g. 0644)", first)
			}
			mode := uint32(m)
			return func(f *fsys.FS, p string) error { return f.Setattr(p, fsys.SetAttr{Mode: &mode}) }, nil
		})
	}
	return c
}

func newChownCmd() *cobra.Command {
	c, _, of := newCmd("chown UID[:GID] IMAGE:PATH...", "change owner and group", "  ddfs chown 0:0 disk.img:/etc/shadow\n  ddfs chown 1000 disk.img:/home/me\n")
	cli.NoHelpShorthand(c)
	c.RunE = func(c *cobra.Command, args []string) error {
		return setEach(of, args, nil, 1, func(first string) (func(*fsys.FS, string) error, error) {
			u, g, hasG := strings.Cut(first, ":")
			var a fsys.SetAttr
			if u != "" {
				n, err := strconv.ParseUint(u, 10, 32)
				if err != nil {
					return nil, usageErr("invalid user %q (numeric ids only)", u)
				}
				v := uint32(n)
				a.UID = &v
			}
			if hasG && g != "" {
				n, err := strconv.ParseUint(g, 10, 32)
				if err != nil {
					return nil, usageErr("invalid group %q (numeric ids only)", g)
				}
				v := uint32(n)
				a.GID = &v
			}
			return func(f *fsys.FS, p string) error { return f.Setattr(p, a) }, nil
		})
	}
	return c
}
