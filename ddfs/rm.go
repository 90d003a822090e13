package main

import (
	"errors"
	"io/fs"
	"path"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/fsys"
)

func newRmCmd() *cobra.Command {
	c, fl, of := newCmd("rm [-r] [-f] IMAGE:PATH...", "remove files or directories", "  ddfs rm disk.img:/tmp/x\n  ddfs rm -rf disk.img:/var/cache\n")
	rec := fl.BoolP("recursive", "r", false, "remove directories and their contents")
	fl.BoolVarP(rec, "R", "R", false, "same as -r")
	force := fl.BoolP("force", "f", false, "ignore missing paths")
	c.RunE = func(c *cobra.Command, args []string) error {
		img, paths, err := imageOperands(fl.Args())
		if err != nil {
			return err
		}
		if len(paths) == 0 && !*force {
			return usageErr("missing IMAGE:PATH")
		}
		im, err := of.openImage(img, true)
		if err != nil {
			return err
		}
		// Patterns are expanded before anything is removed.
		var all []string
		for _, p := range paths {
			ms, err := expandPaths(im, []string{p}, nil)
			if *force && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				im.close()
				return im.err(err)
			}
			all = append(all, ms...)
		}
		for _, p := range all {
			if path.Clean(p) == "/" {
				im.close()
				return usageErr("refusing to remove the root directory")
			}
			err := remove(im.f, p, *rec)
			if *force && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				im.f.Abort()
				im.close()
				return im.err(err)
			}
		}
		return im.close()
	}
	return c
}

// remove deletes p, its contents first when recursive; the batch may
// commit between files, so a crash leaves a prefix of the removal done.
func remove(f *fsys.FS, p string, recursive bool) error {
	in, err := f.Resolve(p, false)
	if err != nil {
		return err
	}
	if in.IsDir() {
		if !recursive {
			return pathErr("remove", p, syscall.EISDIR)
		}
		var names []string
		var bad fsys.Refused // an entry fsck flags is left, and fails the removal
		err := f.ReadDir(in, func(e fsys.DirEntry) bool { names = append(names, e.Name); return true })
		if err := bad.Note(p, err); err != nil {
			return err
		}
		for _, n := range names {
			if err := remove(f, path.Join(p, n), true); err != nil {
				return err
			}
		}
		if err := bad.Done(nil); err != nil {
			return err
		}
	}
	if err := f.Remove(p); err != nil {
		return err
	}
	return f.MaybeCommit()
}
