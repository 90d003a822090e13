package main

import (
	"path"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/fsys"
)

const lnLong = `With several TARGETs, LINK must be a directory of the image: each link is made
in it under its TARGET's name. No operand is a pattern: a name with *, ? or
[...] is taken as it is.`

func newLnCmd() *cobra.Command {
	c, fl, of := newCmd("ln [-s] TARGET... IMAGE:LINK\n\n"+lnLong, "make hard or symbolic links", "  ddfs ln disk.img:/a disk.img:/hardlink\n  ddfs ln -s ../lib/x.so disk.img:/usr/bin/x.so\n  ddfs ln -s ../lib/a.so ../lib/b.so disk.img:/usr/bin/\n")
	sym := fl.BoolP("symbolic", "s", false, "make a symbolic link (TARGET is stored as given)")
	c.RunE = func(c *cobra.Command, args []string) error {
		if fl.NArg() < 2 {
			return usageErr("want TARGET... LINK")
		}
		targets, linkArg := fl.Args()[:fl.NArg()-1], fl.Arg(fl.NArg()-1)
		link := parseOperand(linkArg)
		if link.image == "" {
			return notImage(linkArg, "(LINK is in an image)")
		}
		im, err := of.openImage(link.image, true)
		if err != nil {
			return err
		}
		fail := func(err error) error {
			im.f.Abort()
			im.close()
			return im.err(err)
		}
		lp := abs(link.path)
		in, err := im.f.Resolve(lp, true)
		linkIsDir := err == nil && in.IsDir()
		if len(targets) > 1 && !linkIsDir {
			return fail(notDirTarget(im.name + ":" + lp))
		}
		for _, target := range targets {
			to := lp
			t := parseOperand(target)
			if linkIsDir {
				to = path.Join(lp, path.Base(t.path))
			}
			if err := lnOne(im, target, t, link.image, to, *sym); err != nil {
				return fail(err)
			}
		}
		return im.close()
	}
	return c
}

// lnOne makes link lp to target (t, its parsed form): a symlink stores
// the target as given (an image path of the same image as its path).
func lnOne(im *image, target string, t operand, img, lp string, sym bool) error {
	if sym {
		if t.image == img {
			target = t.path
		}
		_, err := im.f.Symlink(target, lp, fsys.Attr{UID: uid(), GID: gid()})
		return err
	}
	if t.image != "" && t.image != img {
		return usageErr("a hard link must stay in one image")
	}
	return im.f.Link(abs(t.path), lp)
}
