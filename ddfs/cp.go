package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/progress"
	"github.com/ddfs/ddfs/pkg/transfer"
)

const cpExamples = `  ddfs cp -r ./tree disk.img:/              # host tree into the image root
  ddfs cp -a disk.img:/etc ./etc-copy        # out of the image, keeping everything
  ddfs cp disk.img:/a disk.img:/b            # inside one image
  ddfs cp ./x:y disk.img:/                   # a host file whose name has a colon
  ddfs cp -a disk.img:/vm disk.img:/vm-snap   # a reflink copy: shares the data until written
  ddfs cp -r old.img:/home new.img:/          # image to image (the target's dedupe applies)
  echo hello | ddfs cp - disk.img:/motd       # stdin into a file (mode 0666 less the umask)
  ddfs cp disk.img:/motd - | wc -c            # a file to stdout (holes as zeros)
  ddfs cp 'disk.img:/etc/*.conf' ./out/       # a pattern, expanded inside the image
  ddfs cp -a efi.img:/EFI ./efi-copy          # out of a foreign image (ext4, squashfs, ISO 9660, FAT)
  ddfs cp -a rootfs.ext4:/etc disk.img:/      # a foreign tree into the image (-a, -r: what cp -a keeps)
`

const cpLong = `SRC "-" is stdin: the file DST is created or replaced with its bytes. DST "-" is
stdout: the SRC files are written one after the other (holes as zeros;
directories are refused). An image path with *, ? or [...] (quoted, so the shell
leaves it) is a pattern matched inside the image, as scp and mcopy do; names
starting with '.' match only a pattern starting with '.'. DST is never a
pattern: it may name something to create.`

func newCpCmd() *cobra.Command {
	c, fl, of := newCmd("cp [-r] [-a] [-p] [-n] [-L] [--reflink[=always|auto|never]] SRC... DST\n\n"+cpLong, "copy into, out of, or inside an image", cpExamples)
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
		if f, ok := stderr.(*os.File); ok && !*quiet && cli.IsTerminal(f) {
			bar := progress.New(f)
			defer bar.Done()
			bar.EndLineOnInterrupt()
			o.Progress = bar.Add
			// The total is summed beside the copy; a small tree's is
			// there before the first line is drawn.
			summed := make(chan struct{})
			go func() { hostTotal(bar, srcs, o.Follow); close(summed) }()
			select {
			case <-summed:
			case <-time.After(50 * time.Millisecond):
			}
		}
		if dst.image != "" {
			return copyInto(of, srcs, dst, o)
		}
		if len(srcs) == 1 && srcs[0].image != "" && dst.path != "-" {
			if fim, err := openForeign(srcs[0].image); fim != nil || err != nil {
				if err != nil {
					return err
				}
				defer fim.Close()
				if o.Follow {
					return usageErr("-L on a foreign image is not supported yet")
				}
				return copyOutForeign(stderr, fim, cli.Prog(c), []string{abs(srcs[0].path)}, dst.path, o.Recursive, o.Archive || o.Preserve)
			}
		}
		return copyOut(of, srcs, dst, o)
	}
	return c
}

// copyInto copies host paths (or stdin, "-"), or paths of the same or
// another image, into an image.
func copyInto(of *openFlags, srcs []operand, dst operand, o transfer.Options) error {
	im, err := of.openImage(dst.image, true)
	if err != nil {
		return err
	}
	to := abs(dst.path)
	// Several sources need a directory, checked before anything is copied.
	if err := imageTarget(im, to, len(srcs))(1); err != nil {
		im.f.Abort()
		im.close()
		return err
	}
	for _, s := range srcs {
		switch {
		case s.image == "" && s.path == "-":
			err = transfer.CopyFromReader(im.f, os.Stdin, to, redirectMode(), o)
		case s.image == "":
			err = transfer.CopyIn(im.f, s.path, to, o, dotInto(im, s.path, to))
		case s.image == dst.image:
			err = eachMatch(im, s, imageTarget(im, to, len(srcs)), func(p string) error { return transfer.CopyWithin(im.f, p, to, o) })
		case isForeign(s.image):
			err = copyForeignInto(s, im.f, to, o)
		default:
			err = copyAcross(of, s, im, to, len(srcs), o)
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
	var oe *transfer.OmitDirError // names its source already, as GNU cp
	if err == nil || errors.As(err, &pe) || errors.As(err, &oe) {
		return err
	}
	return fmt.Errorf("%s: %w", dst, err)
}

// hostTotal gives the bar the bytes of the host sources (summed beside
// the copy, up to a million files), so it can show a percentage and ETA.
func hostTotal(bar *progress.Bar, srcs []operand, follow bool) {
	var paths []string
	for _, s := range srcs {
		if s.image != "" || s.path == "-" {
			return // an image or a stream: no total known up front
		}
		paths = append(paths, s.path)
	}
	if total, ok := transfer.HostBytes(paths, follow, 1<<20); ok {
		bar.SetTotal(total)
	}
}

// redirectMode is the mode a shell redirect gives a new file: 0666 less
// the umask (0644 with the usual 022).
func redirectMode() uint32 {
	m := unix.Umask(0)
	unix.Umask(m)
	return 0o666 &^ uint32(m)
}

// eachMatch calls fn with every path the operand s of image src expands
// to (expandPaths), after check was told how many there are.
func eachMatch(src *image, s operand, check func(n int) error, fn func(p string) error) error {
	ps, err := expandPaths(src, []string{abs(s.path)}, nil)
	if err != nil {
		return src.err(err)
	}
	if err := check(len(ps)); err != nil {
		return err
	}
	for _, p := range ps {
		if fsys.DirOnly(p) { // "f/" of a file is ENOTDIR, not f
			if _, err := src.f.Resolve(p, true); errors.Is(err, syscall.ENOTDIR) {
				return src.err(err)
			}
		}
		if err := fn(path.Clean(p)); err != nil {
			return src.err(err)
		}
	}
	return nil
}

// imageTarget requires image path dst to be a directory when n sources
// are copied to it, as cp does; k is what one of them expanded to.
func imageTarget(im *image, dst string, n int) func(k int) error {
	return func(k int) error {
		if n+k-1 <= 1 {
			return nil
		}
		return imageDirTarget(im, dst)
	}
}

// imageDirTarget requires the target of several sources (cp, mv, ln)
// to be a directory of the image: else cp's error, exit 1.
func imageDirTarget(im *image, dst string) error {
	if in, err := im.f.Resolve(dst, true); err != nil || !in.IsDir() {
		return notDirTarget(im.name + ":" + dst)
	}
	return nil
}

// notDirTarget is GNU cp's refusal of several sources into a target
// that is not a directory (or does not exist).
func notDirTarget(name string) error {
	return fmt.Errorf("target '%s' is not a directory", name)
}

// hostTarget is imageTarget for a host destination.
func hostTarget(dst string, n int) func(int) error {
	return func(k int) error {
		if n+k-1 <= 1 {
			return nil
		}
		if st, err := os.Stat(dst); err != nil || !st.IsDir() {
			return notDirTarget(dst)
		}
		return nil
	}
}

// copyAcross copies a path of another image (opened read-only) into im.
func copyAcross(of *openFlags, s operand, im *image, dst string, n int, o transfer.Options) error {
	src, err := of.openImage(s.image, false)
	if err != nil {
		return err
	}
	err = eachMatch(src, s, imageTarget(im, dst, n), func(p string) error { return transfer.CopyBetween(src.f, im.f, p, dst, o) })
	if cerr := src.close(); err == nil {
		err = cerr
	}
	return err
}

// copyOut copies image paths to the host, or to stdout ("-").
func copyOut(of *openFlags, srcs []operand, dst operand, o transfer.Options) error {
	toStdout := dst.path == "-"
	check := hostTarget(dst.path, len(srcs))
	if toStdout {
		check = func(int) error { return nil } // files are written one after the other
	}
	if err := check(1); err != nil {
		return err
	}
	for _, s := range srcs {
		if s.image == "" {
			return usageErr("%s: neither SRC nor DST is in an image (use IMAGE:PATH)", s.path)
		}
		im, err := of.openImage(s.image, false)
		if err != nil {
			return err
		}
		out := func(p string) error { return transfer.CopyOut(im.f, p, dst.path, o) }
		if toStdout {
			out = toWriter(im, os.Stdout, o)
		}
		err = eachMatch(im, s, check, out)
		cerr := im.close()
		if err != nil {
			return err
		}
		if cerr != nil {
			return cerr
		}
	}
	return nil
}

// toWriter returns the copy of one image file to w (cp SRC -): its bytes,
// holes as zeros; a directory is refused as cp without -r refuses one.
func toWriter(im *image, w io.Writer, o transfer.Options) func(p string) error {
	buf := make([]byte, 1<<20)
	if o.Progress != nil {
		w = progressWriter{w, o.Progress}
	}
	return func(p string) error {
		in, err := im.f.Resolve(p, true)
		if err != nil {
			return err
		}
		if in.IsDir() {
			return fmt.Errorf("%s:%s: omitting directory (only files go to stdout)", im.name, p)
		}
		return writeFile(im, in, p, w, buf)
	}
}

// progressWriter tells the progress bar what was written.
type progressWriter struct {
	w    io.Writer
	done func(int64)
}

func (p progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done(int64(n))
	return n, err
}

// dotInto reports whether host source src names a directory's contents
// ("DIR/.", as GNU cp reads it) copied into an existing image directory
// to, which then merges them and takes DIR's attributes.
func dotInto(im *image, src, to string) bool {
	if filepath.Base(src) != "." || !strings.HasSuffix(src, ".") {
		return false
	}
	in, err := im.f.Resolve(to, true)
	return err == nil && in.IsDir()
}
