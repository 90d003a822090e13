package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ddfs/ddfs/pkg/progress"
	"github.com/ddfs/ddfs/pkg/transfer"
)

const cpExamples = `  ddfs cp -r ./tree disk.img:/              host tree into the image root
  ddfs cp -a disk.img:/etc ./etc-copy        out of the image, keeping everything
  ddfs cp disk.img:/a disk.img:/b            inside one image
  ddfs cp ./x:y disk.img:/                   a host file whose name has a colon
  ddfs cp -a disk.img:/vm disk.img:/vm-snap   a reflink copy: shares the data until written
  ddfs cp -r old.img:/home new.img:/          image to image (the target's dedupe applies)
`

func newCpCmd() *cobra.Command {
	c, fl, of := newCmd("cp [-r] [-a] [-p] [-n] [-L] [--reflink[=always|auto|never]] SRC... DST", "copy into, out of, or inside an image", cpExamples)
	var o transfer.Options
	fl.BoolVarP(&o.Recursive, "recursive", "r", false, "copy directories recursively")
	fl.BoolVarP(&o.Recursive, "R", "R", false, "same as -r")
	fl.BoolVarP(&o.Archive, "archive", "a", false, "keep mode, owners, times, symlinks, hard links, xattrs, special files; implies -r")
	fl.BoolVarP(&o.Preserve, "preserve", "p", false, "keep mode, owners and times")
	fl.BoolVarP(&o.NoClobber, "no-clobber", "n", false, "do not replace existing files")
	fl.BoolVarP(&o.Follow, "dereference", "L", false, "follow symlinks in SRC")
	quiet := fl.BoolP("quiet", "q", false, "no progress bar")
	reflink := fl.String("reflink", "auto", "inside one image: always (share data, fail across images), auto (share when possible) or never (copy the bytes)")
	fl.Lookup("reflink").NoOptDefVal = "always"
	c.RunE = func(c *cobra.Command, args []string) error {
		stderr := c.ErrOrStderr()
		switch *reflink {
		case "auto":
			o.Reflink = transfer.ReflinkAuto
		case "always", "never":
			o.Reflink = *reflink
		default:
			return usageErr("--reflink: want always, auto or never")
		}
		if o.Archive {
			o.Recursive = true
		}
		if fl.NArg() < 2 {
			return usageErr("want SRC... DST")
		}
		srcs := make([]operand, 0, fl.NArg()-1)
		for _, a := range fl.Args()[:fl.NArg()-1] {
			srcs = append(srcs, parseOperand(a))
		}
		dst := parseOperand(fl.Arg(fl.NArg() - 1))
		if f, ok := stderr.(*os.File); ok && !*quiet && term.IsTerminal(int(f.Fd())) {
			bar := progress.New(f)
			defer bar.Done()
			o.Progress = bar.Add
		}
		if dst.image != "" {
			return copyInto(of, srcs, dst, o)
		}
		return copyOut(of, srcs, dst, o)
	}
	return c
}

// copyInto copies host paths, or paths of the same or another image,
// into an image.
func copyInto(of *openFlags, srcs []operand, dst operand, o transfer.Options) error {
	im, err := of.openImage(dst.image, true)
	if err != nil {
		return err
	}
	for _, s := range srcs {
		switch {
		case s.image == "":
			err = transfer.CopyIn(im.f, s.path, abs(dst.path), o, false)
		case s.image == dst.image:
			err = transfer.CopyWithin(im.f, abs(s.path), abs(dst.path), o)
		default:
			err = copyAcross(of, s, im, abs(dst.path), o)
		}
		if err != nil {
			im.f.Abort()
			im.close()
			return named(im.err(err), dst)
		}
	}
	return named(im.close(), dst)
}

// named gives an error that names no path (a commit out of space, a
// device write failing) the destination operand, keeping the reason:
// "cp: a.img:/x: record chunk 1: ...: no space left on device".
func named(err error, dst operand) error {
	var pe *fs.PathError
	if err == nil || errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("%s: %w", dst, err)
}

// copyAcross copies a path of another image (opened read-only) into im.
func copyAcross(of *openFlags, s operand, im *image, dst string, o transfer.Options) error {
	src, err := of.openImage(s.image, false)
	if err != nil {
		return err
	}
	err = transfer.CopyBetween(src.f, im.f, abs(s.path), dst, o)
	if cerr := src.close(); err == nil {
		err = cerr
	}
	return src.err(err)
}

// copyOut copies image paths to the host.
func copyOut(of *openFlags, srcs []operand, dst operand, o transfer.Options) error {
	if len(srcs) > 1 {
		if st, err := os.Stat(dst.path); err != nil || !st.IsDir() {
			return usageErr("target '%s' is not a directory", dst.path)
		}
	}
	for _, s := range srcs {
		if s.image == "" {
			return usageErr("%s: neither SRC nor DST is in an image (use IMAGE:PATH)", s.path)
		}
		im, err := of.openImage(s.image, false)
		if err != nil {
			return err
		}
		err = transfer.CopyOut(im.f, path.Clean(abs(s.path)), dst.path, o)
		cerr := im.close()
		if err != nil {
			return im.err(err)
		}
		if cerr != nil {
			return cerr
		}
	}
	return nil
}
