package main

import (
	"errors"
	"io/fs"
	"path"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/fsys"
)

func newMkdirCmd() *cobra.Command {
	c, fl, of := newCmd("mkdir [-p] [-m MODE] IMAGE:PATH...\n\nPATH is never a pattern: a name with *, ? or [...] is made as it is.", "make directories", "  ddfs mkdir -p disk.img:/usr/local/bin\n")
	parents := fl.BoolP("parents", "p", false, "make parents as needed; no error if it exists")
	modeStr := fl.StringP("mode", "m", "755", "permission bits (octal)")
	c.RunE = func(c *cobra.Command, args []string) error {
		im, paths, err := openOperands(of, args, true)
		if err != nil {
			return err
		}
		mode, err := strconv.ParseUint(*modeStr, 8, 32)
		if err != nil || mode > 0o7777 {
			im.close()
			return usageErr("invalid mode %q (octal)", *modeStr)
		}
		a := fsys.Attr{Mode: uint32(mode), UID: uid(), GID: gid()}
		for _, p := range paths {
			if err := mkdir(im.f, p, a, *parents); err != nil {
				im.f.Abort()
				im.close()
				return im.err(err)
			}
		}
		return im.close()
	}
	return c
}

func mkdir(f *fsys.FS, p string, a fsys.Attr, parents bool) error {
	if !parents {
		_, err := f.Mkdir(p, a)
		return err
	}
	if in, err := f.Resolve(p, true); err == nil {
		if !in.IsDir() {
			return pathErr("mkdir", p, syscall.EEXIST)
		}
		return nil
	}
	if parent := path.Dir(path.Clean(p)); parent != "/" {
		if err := mkdir(f, parent, a, true); err != nil {
			return err
		}
	}
	_, err := f.Mkdir(p, a)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}
