package main

import (
	"io"
	"io/fs"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/fsys"
)

func newCatCmd() *cobra.Command {
	c, _, of := newCmd("cat IMAGE:PATH...", "print files", "  ddfs cat disk.img:/etc/hostname\n")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout := c.OutOrStdout()
		im, paths, err := openOperands(of, args, false)
		if err != nil {
			return err
		}
		defer im.close()
		if paths, err = expandPaths(im, paths, nil); err != nil {
			return im.err(err)
		}
		buf := make([]byte, 1<<20)
		for _, p := range paths {
			in, err := im.f.Resolve(p, true)
			if err != nil {
				return im.err(err)
			}
			if in.IsDir() {
				return im.err(pathErr("cat", p, syscall.EISDIR))
			}
			if err := writeFile(im, in, p, stdout, buf); err != nil {
				return err
			}
		}
		return nil
	}
	return c
}

// writeFile streams file in (image path p) to w through buf: holes as
// zeros (a 2^62-byte sparse file streams 2^62 zeros), the work per extent
// read bounded. cat and cp SRC - use it.
func writeFile(im *image, in *fsys.Inode, p string, w io.Writer, buf []byte) error {
	var werr error
	err := im.f.ReadChunks(in, buf, func(b []byte, _ uint64) error {
		_, werr = w.Write(b)
		return werr
	})
	if werr != nil {
		return werr
	}
	if err != nil {
		// Named like cp names it: "disk.img:/x: Input/output error".
		return im.err(&fs.PathError{Op: "read", Path: p, Err: err})
	}
	return nil
}
