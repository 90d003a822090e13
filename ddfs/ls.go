package main

import (
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/fsys"
)

func newLsCmd() *cobra.Command {
	c, fl, of := newCmd("ls [-l] [-a] [-R] [-h] IMAGE:PATH...", "list directory contents", "  ddfs ls disk.img:/\n  ddfs ls -lhR disk.img:/etc\n")
	cli.NoHelpShorthand(c)
	long := fl.BoolP("long", "l", false, "long listing")
	all := fl.BoolP("all", "a", false, "show entries starting with .")
	rec := fl.BoolP("recursive", "R", false, "list subdirectories recursively")
	human := fl.BoolP("human-readable", "h", false, "sizes with K, M, G (with -l)")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout := c.OutOrStdout()
		im, paths, err := openOperands(of, args, false)
		if err != nil {
			return err
		}
		defer im.close()
		l := &lister{im: im, w: stdout, long: *long, all: *all, rec: *rec, human: *human, header: len(paths) > 1 || *rec}
		for i, p := range paths {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			if err := l.list(p); err != nil {
				return im.err(err)
			}
		}
		return im.err(l.bad.Done(nil))
	}
	return c
}

type lister struct {
	im                            *image
	w                             io.Writer
	long, all, rec, human, header bool
	bad                           fsys.Refused // entries fsck flags: listed last, as the error
}

func (l *lister) list(p string) error {
	in, err := l.im.f.Resolve(p, true)
	if err != nil {
		return err
	}
	if !in.IsDir() {
		l.line(in, p, path.Base(p))
		return nil
	}
	type ent struct {
		name string
		in   *fsys.Inode
	}
	var ents []ent
	kids, err := l.im.f.Children(in)
	if err := l.bad.Note(p, err); err != nil {
		return err
	}
	for _, k := range kids {
		if l.all || !strings.HasPrefix(k.Entry.Name, ".") {
			ents = append(ents, ent{k.Entry.Name, k.Inode})
		}
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].name < ents[j].name })
	if l.header {
		fmt.Fprintf(l.w, "%s:%s:\n", l.im.name, p)
	}
	for _, e := range ents {
		l.line(e.in, path.Join(p, e.name), e.name)
	}
	if l.rec {
		for _, e := range ents {
			if e.in.IsDir() {
				fmt.Fprintln(l.w)
				if err := l.list(path.Join(p, e.name)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (l *lister) line(in *fsys.Inode, full, name string) {
	if !l.long {
		fmt.Fprintln(l.w, name)
		return
	}
	if in.IsSymlink() {
		if t, err := l.im.f.Readlink(full); err == nil {
			name += " -> " + t
		}
	}
	size := sizeString(in.Size, l.human)
	if in.Mode&0o170000 == 0o020000 || in.Mode&0o170000 == 0o060000 {
		size = fmt.Sprintf("%d, %d", in.Rdev>>8&0xfff, in.Rdev&0xff|in.Rdev>>12&0xfff00)
	}
	fmt.Fprintf(l.w, "%s %3d %5d %5d %8s %s %s\n", modeString(in.Mode), in.Nlink, in.UID, in.GID, size, timeString(in), name)
}
