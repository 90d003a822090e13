package main

import (
	"io"
	"io/fs"
	"slices"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/fsys"
)

func newCatCmd() *cobra.Command {
	c, _, of := newCmd("cat IMAGE:PATH|-...\n\n\"-\" is stdin, read to its end, as GNU cat.", "print files",
		"  ddfs cat disk.img:/etc/hostname\n  echo '# this host:' | ddfs cat - disk.img:/etc/hostname   # - is stdin\n  ddfs cat rootfs.squashfs:/etc/os-release                 # a foreign image, read-only\n")
	c.RunE = func(c *cobra.Command, args []string) error {
		return catOperands(of, args, c.InOrStdin(), c.OutOrStdout())
	}
	return c
}

// catOperands prints each operand in order: IMAGE:PATH (a pattern
// expanded in its place) or "-", stdin.
func catOperands(of *openFlags, args []string, stdin io.Reader, stdout io.Writer) error {
	files := slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "-" })
	var im *image
	var paths []string
	if fim, paths, err := foreignOperands(files); fim != nil || err != nil {
		if err != nil {
			return err
		}
		defer fim.Close()
		if len(files) != len(args) {
			return usageErr("- (stdin) with a foreign image's files is not supported")
		}
		return catForeign(stdout, fim, paths)
	}
	if len(files) > 0 || len(args) == 0 { // no operand at all: its usage error
		var err error
		if im, paths, err = openOperands(of, files, false); err != nil {
			return err
		}
		defer im.close()
	}
	buf := make([]byte, 1<<20)
	for _, a := range args {
		if a == "-" {
			if err := copyStdin(stdout, stdin, buf); err != nil {
				return err
			}
			continue
		}
		p := paths[0]
		paths = paths[1:]
		if err := catPath(im, p, stdout, buf); err != nil {
			return err
		}
	}
	return nil
}

// catPath prints the file (or the files a pattern matches) at image path p.
func catPath(im *image, p string, w io.Writer, buf []byte) error {
	ps, err := expandPaths(im, []string{p}, nil)
	if err != nil {
		return im.err(err)
	}
	for _, p := range ps {
		in, err := im.f.Resolve(p, true)
		if err != nil {
			return im.err(err)
		}
		if in.IsDir() {
			return im.err(pathErr("cat", p, syscall.EISDIR))
		}
		if err := writeFile(im, in, p, w, buf); err != nil {
			return err
		}
	}
	return nil
}

// copyStdin copies r to w through buf; a read error names "-".
func copyStdin(w io.Writer, r io.Reader, buf []byte) error {
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &fs.PathError{Op: "read", Path: "-", Err: err}
		}
	}
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
