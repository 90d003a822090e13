package main

import (
	"path"

	"github.com/spf13/cobra"
)

func newMvCmd() *cobra.Command {
	c, fl, of := newCmd("mv IMAGE:SRC... IMAGE:DST", "move or rename inside an image", "  ddfs mv disk.img:/a disk.img:/b\n  ddfs mv disk.img:/x disk.img:/y disk.img:/dir/\n")
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
		srcs := paths[:len(paths)-1]
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
