package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/progress"
	"github.com/ddfs/ddfs/pkg/transfer"
)

func newTarInCmd() *cobra.Command {
	c, fl, of := newCmd("tar-in IMAGE[:DIR] < archive.tar", "extract a tar archive (plain, gzip, zstd, xz or bzip2) from stdin into an image", "  ddfs tar-in rootfs.img < alpine-minirootfs.tar.gz\n  zcat x.tar.gz | ddfs tar-in disk.img:/opt\n")
	quiet := fl.BoolP("quiet", "q", false, "no progress bar")
	c.RunE = func(c *cobra.Command, args []string) error {
		img, dir, err := imageDir(fl.Args())
		if err != nil {
			return err
		}
		im, err := of.openImage(img, true)
		if err != nil {
			return err
		}
		var in io.Reader = os.Stdin
		if bar := tarBar(c, *quiet, "read"); bar != nil {
			defer bar.Done()
			if st, err := os.Stdin.Stat(); err == nil && st.Mode().IsRegular() {
				bar.SetTotal(uint64(st.Size())) // an archive file: done of total, ETA
			}
			in = progress.Reader{R: in, Bar: bar}
		}
		if err := transfer.TarIn(im.f, bufio.NewReaderSize(in, 1<<20), dir, transfer.Options{}); err != nil {
			im.f.Abort()
			im.close()
			return im.err(err)
		}
		return im.close()
	}
	return c
}

func newTarOutCmd() *cobra.Command {
	c, fl, of := newCmd("tar-out IMAGE[:DIR] > archive.tar\n\n"+tarOutLong, "write an image tree as a tar archive to stdout", "  ddfs tar-out disk.img > all.tar\n  ddfs tar-out disk.img:/etc | tar -tvf -\n  ddfs tar-out rootfs.squashfs:/ | tar -tvf -    # a foreign image's tree\n")
	c.Annotations = map[string]string{cli.ExitCodesKey: "0 everything archived, 1 an entry left out or zero-filled (each named on stderr) or an error, 2 usage error"}
	quiet := fl.BoolP("quiet", "q", false, "no progress bar")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout := c.OutOrStdout()
		img, dir, err := imageDir(fl.Args())
		if err != nil {
			return err
		}
		if f, ok := stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			// GNU tar's words and exit code (2): a usage error, the cure
			// is a redirection.
			return usageErr("Refusing to write archive contents to terminal (redirect stdout or pipe it)")
		} else if ok {
			widenPipe(f)
		}
		if fim, err := openForeign(img); fim != nil || err != nil {
			if err != nil {
				return err
			}
			defer fim.Close()
			return tarOutForeign(stdout, c.ErrOrStderr(), fim, cli.Prog(c), dir)
		}
		im, err := of.openImage(img, false)
		if err != nil {
			return err
		}
		defer im.close()
		if bar := tarBar(c, *quiet, "written"); bar != nil {
			defer bar.Done()
			stdout = progress.Writer{W: stdout, Bar: bar}
		}
		// The file data is read from a second read-only instance of the
		// image on other goroutines (the walk and the reads on two
		// cores); with --stats one instance counts all the I/O.
		var data *fsys.FS
		if of.stats == "" {
			if twin, err := of.openImage(img, false); err == nil {
				defer twin.close()
				data = twin.f
			}
		}
		// TarOut buffers (and flushes after an error too: the entries
		// written before it must go out).
		skipped := func(err error) { fmt.Fprintf(c.ErrOrStderr(), "%s: %s\n", cli.Prog(c), skipLine(im.name, err)) }
		err = transfer.TarOutReport(im.f, data, stdout, dir, skipped)
		if errors.Is(err, transfer.ErrEntriesSkipped) {
			return &cli.CodeError{Code: cli.ExitError} // each one said already
		}
		return im.err(err)
	}
	return c
}

const tarOutLong = `Damage does not stop it, as cp -a goes on: the archive stays valid and
holds every entry that reads. A file of up to 1 MiB is read and checked
before its header is written, so one whose data does not read is left out
(a hard link to it is tried as the file). A bigger file, or one with holes,
is streamed after its header: where its data stops reading its entry holds
zeros to the end, as GNU tar pads. Either way the file is named on stderr
(IMAGE:PATH: reason) and the exit status is 1.`

// skipLine is an entry tar-out left out or zero-filled, on one line:
// IMAGE:PATH: reason.
func skipLine(img string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = fmt.Errorf("%s:%s: %w", img, pe.Path, pe.Err)
	}
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

// tarBar is a progress bar on stderr when it is a terminal (and not -q).
func tarBar(c *cobra.Command, quiet bool, label string) *progress.Bar {
	f, ok := c.ErrOrStderr().(*os.File)
	if !ok || quiet || !cli.IsTerminal(f) {
		return nil
	}
	bar := progress.NewLabeled(f, label)
	bar.EndLineOnInterrupt()
	return bar
}

// imageDir takes one IMAGE or IMAGE:DIR operand.
func imageDir(args []string) (string, string, error) {
	if len(args) != 1 {
		return "", "", usageErr("want one IMAGE[:DIR]")
	}
	o := parseOperand(args[0])
	if o.image == "" {
		if st, err := os.Stat(args[0]); isImageFile(args[0]) || err == nil && !st.IsDir() {
			return args[0], "/", nil
		}
		return "", "", usageErr("%s: no such image", args[0])
	}
	return o.image, abs(o.path), nil
}

// widenPipe grows stdout's pipe buffer (64 KiB by default) to the
// archive's 1 MiB writes where stdout is a pipe, so the reader and ddfs
// do not take turns 16 times per write. Best effort: the limit is
// /proc/sys/fs/pipe-max-size (1 MiB by default).
func widenPipe(f *os.File) {
	if st, err := f.Stat(); err == nil && st.Mode()&os.ModeNamedPipe != 0 {
		unix.FcntlInt(f.Fd(), unix.F_SETPIPE_SZ, 1<<20) //nolint:errcheck // best effort
	}
}
