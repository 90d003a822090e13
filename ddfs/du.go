package main

import (
	"fmt"
	"io"
	"path"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/units"
)

const duUse = `du [-ab] [-c] [-d N] [-s] [-h] [--apparent-size] [--json] IMAGE:PATH...

As GNU du: disk usage (the bytes of the extents a file references) in
1024-byte blocks rounded up, directories after their contents, hard links
counted once; -b is the apparent size in bytes, -h sizes as 1.1K, 23M.`

type duOpts struct {
	all, summary, human, bytes, apparent, total, json bool
	depth                                             int
}

// duJSON is one line of du in --json output.
type duJSON struct {
	Path  jstr   `json:"path"`
	Bytes uint64 `json:"bytes"` // disk usage: extent bytes referenced
	Size  uint64 `json:"size"`  // apparent size
}

func newDuCmd() *cobra.Command {
	c, fl, of := newCmd(duUse, "show space used by files", "  ddfs du -sh disk.img:/usr\n  ddfs du -d 1 -c disk.img:/\n  ddfs du -ab disk.img:/etc\n  ddfs du --json -s disk.img:/\n")
	cli.NoHelpShorthand(c)
	o := &duOpts{}
	fl.BoolVarP(&o.all, "all", "a", false, "a line for every file, not only directories")
	fl.BoolVarP(&o.summary, "summarize", "s", false, "only a total for each argument (-d 0)")
	fl.BoolVarP(&o.human, "human-readable", "h", false, "sizes as 1.1K, 23M")
	fl.BoolVarP(&o.bytes, "bytes", "b", false, "apparent sizes in bytes (--apparent-size --block-size=1)")
	fl.BoolVar(&o.apparent, "apparent-size", false, "apparent sizes instead of disk usage")
	fl.BoolVarP(&o.total, "total", "c", false, "a grand total at the end")
	fl.IntVarP(&o.depth, "max-depth", "d", -1, "lines only for directories N or fewer levels below an argument")
	fl.BoolVar(&o.json, "json", false, "print a JSON array of {path, bytes, size}")
	c.RunE = func(c *cobra.Command, args []string) error {
		if o.summary {
			if c.Flags().Changed("max-depth") && o.depth != 0 {
				return usageErr("-s and -d %d together", o.depth)
			}
			o.depth = 0
		}
		if o.bytes {
			o.apparent = true
		}
		d := &duWalk{duOpts: o, w: c.OutOrStdout(), seen: map[uint64]bool{}}
		paths, done, err := d.open(of, args)
		if err != nil {
			return err
		}
		defer done()
		var sum duJSON
		for _, p := range paths {
			in, err := d.tree.resolve(p)
			if err != nil {
				return d.tree.err(err)
			}
			u, err := d.walk(in, p, 0)
			if err != nil {
				return d.tree.err(err)
			}
			sum.Bytes, sum.Size = units.SatAdd(sum.Bytes, u.Bytes), units.SatAdd(sum.Size, u.Size)
		}
		if o.total {
			sum.Path = "total"
			d.line(sum, true)
		}
		if o.json {
			if d.js == nil {
				d.js = []duJSON{}
			}
			if err := cli.JSON(d.w, d.js); err != nil {
				return err
			}
		}
		return d.tree.err(d.bad.Done(nil))
	}
	return c
}

// open opens the operands' image, a ddfs one or (read through its
// format's reader) a foreign one, and returns the paths to walk.
func (d *duWalk) open(of *openFlags, args []string) ([]string, func(), error) {
	img, paths, err := imageOperands(args)
	if err == nil && len(paths) > 0 {
		if fim, ferr := openForeign(img); fim != nil || ferr != nil {
			if ferr != nil {
				return nil, nil, ferr
			}
			d.tree, d.name = foreignFind{fim}, img
			return paths, func() { fim.Close() }, nil
		}
	}
	im, paths, err := openOperands(of, args, false)
	if err != nil {
		return nil, nil, err
	}
	d.tree, d.name = imageTree{im}, im.name
	if paths, err = expandPaths(im, paths, &d.bad); err != nil {
		im.close()
		return nil, nil, im.err(err)
	}
	return paths, func() { im.close() }, nil
}

type duWalk struct {
	*duOpts
	tree findTree // a ddfs image, or a foreign one (its files' usage is their size)
	name string   // the image as the user wrote it
	w    io.Writer
	seen map[uint64]bool // directories and multi-link files counted (hard links count once)
	bad  fsys.Refused    // entries fsck flags: not counted, the error at the end
	js   []duJSON
}

// walk returns the usage below in (at depth below an argument) and prints
// the lines -a/-d/-s ask for, directories after their contents.
func (d *duWalk) walk(in *fsys.Inode, p string, depth int) (duJSON, error) {
	u := duJSON{Path: jstr(p)}
	// Only what can be reached twice is remembered, as GNU du does: a
	// file with several links, and directories (a crafted image may list
	// one twice, or in a loop). A map entry per file was 9% of du -s.
	if (in.IsDir() || in.Nlink > 1) && in.Ino != 0 { // 0: a foreign format numbers no inodes
		if d.seen[in.Ino] {
			return u, nil
		}
		d.seen[in.Ino] = true
	}
	u.Bytes, u.Size = in.NBytes, in.Size
	if in.IsDir() {
		kids, err := d.tree.children(p, in)
		if err := d.bad.Note(p, err); err != nil {
			return u, err
		}
		for _, k := range kids {
			ku, err := d.kid(k, p, depth+1)
			if err != nil {
				return u, err
			}
			u.Bytes, u.Size = units.SatAdd(u.Bytes, ku.Bytes), units.SatAdd(u.Size, ku.Size)
		}
	}
	if d.shows(in, depth) {
		d.line(u, false)
	}
	return u, nil
}

// shows reports whether in, depth levels below an argument, gets a line.
func (d *duWalk) shows(in *fsys.Inode, depth int) bool {
	return depth == 0 || ((in.IsDir() || d.all) && (d.depth < 0 || depth <= d.depth))
}

// kid walks child k of directory p; a file that gets no line and has one
// link is summed without building its path (5% of du -s).
func (d *duWalk) kid(k fsys.Child, p string, depth int) (duJSON, error) {
	if in := k.Inode; !in.IsDir() && in.Nlink <= 1 && !d.shows(in, depth) {
		return duJSON{Bytes: in.NBytes, Size: in.Size}, nil
	}
	return d.walk(k.Inode, path.Join(p, k.Entry.Name), depth)
}

func (d *duWalk) line(u duJSON, total bool) {
	if d.json {
		d.js = append(d.js, u)
		return
	}
	n := u.Bytes
	if d.apparent {
		n = u.Size
	}
	var s string
	switch {
	case d.human:
		s = sizeString(n, true)
	case d.bytes:
		s = fmt.Sprint(n)
	default:
		s = fmt.Sprint((n + 1023) / 1024)
	}
	name := d.name + ":" + string(u.Path)
	if total {
		name = "total"
	}
	fmt.Fprintf(d.w, "%s\t%s\n", s, name)
}
