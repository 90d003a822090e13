package main

import (
	"path"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/fsys"
)

func newLnCmd() *cobra.Command {
	c, fl, of := newCmd("ln [-s] TARGET IMAGE:LINK", "make hard or symbolic links", "  ddfs ln disk.img:/a disk.img:/hardlink\n  ddfs ln -s ../lib/x.so disk.img:/usr/bin/x.so\n")
	sym := fl.BoolP("symbolic", "s", false, "make a symbolic link (TARGET is stored as given)")
	c.RunE = func(c *cobra.Command, args []string) error {
		if fl.NArg() != 2 {
			return usageErr("want TARGET LINK")
		}
		link := parseOperand(fl.Arg(1))
		if link.image == "" {
			return notImage(fl.Arg(1), "(LINK is in an image)")
		}
		im, err := of.openImage(link.image, true)
		if err != nil {
			return err
		}
		lp := abs(link.path)
		if in, err := im.f.Resolve(lp, true); err == nil && in.IsDir() {
			t := parseOperand(fl.Arg(0))
			lp = path.Join(lp, path.Base(t.path))
		}
		if *sym {
			target := fl.Arg(0)
			if t := parseOperand(target); t.image == link.image {
				target = t.path
			}
			_, err = im.f.Symlink(target, lp, fsys.Attr{UID: uid(), GID: gid()})
		} else {
			t := parseOperand(fl.Arg(0))
			if t.image != "" && t.image != link.image {
				im.close()
				return usageErr("a hard link must stay in one image")
			}
			err = im.f.Link(abs(t.path), lp)
		}
		if err != nil {
			im.f.Abort()
			im.close()
			return im.err(err)
		}
		return im.close()
	}
	return c
}
