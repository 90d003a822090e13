package main

import (
	"path"

	"github.com/spf13/cobra"
)

const mvLong = `A quoted SRC with *, ? or [...] is a pattern matched inside the image; DST is
never one (it may name something to create). With several sources (or a
pattern matching several) DST must be a directory.`

func newMvCmd() *cobra.Command {
	c, fl, of := newCmd("mv IMAGE:SRC... IMAGE:DST\n\n"+mvLong, "move or rename inside an image", "  ddfs mv disk.img:/a disk.img:/b\n  ddfs mv disk.img:/x disk.img:/y disk.img:/dir/\n  ddfs mv 'disk.img:/tmp/*' disk.img:/var/log/\n")
	c.RunE = func(c *cobra.Command, args []string) error {
		img, paths, err := imageOperands(fl.Args())
		if err != nil {
			return err
		}
		if len(paths) < 2 {
			return usageErr("want SRC... DST")
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
		dst := paths[len(paths)-1]
		srcs, err := expandPaths(im, paths[:len(paths)-1], nil)
		if err != nil {
			return fail(err)
		}
		in, err := im.f.Resolve(dst, true)
		dstIsDir := err == nil && in.IsDir()
		if len(srcs) > 1 && !dstIsDir {
			return fail(notDirTarget(im.name + ":" + dst))
		}
		for _, src := range srcs {
			to := dst
			if dstIsDir {
				to = path.Join(dst, path.Base(path.Clean(src)))
			}
			if err := im.f.Rename(src, to); err != nil {
				return fail(err)
			}
		}
		return im.close()
	}
	return c
}
