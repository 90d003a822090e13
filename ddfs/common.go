package main

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/units"
)

func usageErr(format string, args ...any) error { return cli.Usagef(format, args...) }

// newCmd makes a subcommand with the open flags. use is its synopsis,
// optionally followed by a blank line and a description.
func newCmd(use, short, examples string) (*cobra.Command, *pflag.FlagSet, *openFlags) {
	c := cli.NewCommand(use, short, examples)
	c.ValidArgsFunction = completeOperand
	of := &openFlags{cmd: c}
	of.add(c.Flags())
	return c, c.Flags(), of
}

// modeString renders a mode as ls -l does.
func modeString(m uint32) string {
	t := map[uint32]byte{syscall.S_IFDIR: 'd', syscall.S_IFLNK: 'l', syscall.S_IFCHR: 'c', syscall.S_IFBLK: 'b', syscall.S_IFIFO: 'p', syscall.S_IFSOCK: 's'}[m&syscall.S_IFMT]
	if t == 0 {
		t = '-'
	}
	b := []byte{t}
	const rwx = "rwxrwxrwx"
	for i := 0; i < 9; i++ {
		if m&(1<<(8-i)) != 0 {
			b = append(b, rwx[i])
		} else {
			b = append(b, '-')
		}
	}
	special := func(bit uint32, pos int, set, unset byte) {
		if m&bit != 0 {
			if b[pos] == '-' {
				b[pos] = unset
			} else {
				b[pos] = set
			}
		}
	}
	special(syscall.S_ISUID, 3, 's', 'S')
	special(syscall.S_ISGID, 6, 's', 'S')
	special(syscall.S_ISVTX, 9, 't', 'T')
	return string(b)
}

func sizeString(n uint64, human bool) string {
	if human {
		return units.Short(n)
	}
	return strconv.FormatUint(n, 10)
}

func timeString(in *fsys.Inode) string {
	t := fsys.Time(in.Mtime)
	if time.Since(t) > 180*24*time.Hour || time.Until(t) > time.Hour {
		return t.Format("Jan _2  2006")
	}
	return t.Format("Jan _2 15:04")
}

// stdinIsTerminal is used to refuse binary output to a terminal.
func isTerminal(f *os.File) bool { return cli.IsTerminal(f) }

func pathErr(op, p string, e syscall.Errno) error { return &fs.PathError{Op: op, Path: p, Err: e} }

// pathErrOf names p in an error that lacks a path (an errno from fsys).
func pathErrOf(op, p string, err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return &fs.PathError{Op: op, Path: p, Err: errno}
	}
	return err
}

// openOperands opens the image of a command's IMAGE:PATH operands (at
// least one path is required).
func openOperands(of *openFlags, args []string, write bool) (*image, []string, error) {
	img, paths, err := imageOperands(args)
	if err != nil {
		return nil, nil, err
	}
	if len(paths) == 0 {
		return nil, nil, usageErr("missing IMAGE:PATH")
	}
	im, err := of.openImage(img, write)
	if err != nil {
		return nil, nil, err
	}
	return im, paths, nil
}
