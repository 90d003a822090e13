package main

import (
	"fmt"
	"github.com/spf13/cobra"
	"strconv"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
)

// cmdInspectInode is `ddfs inspect inode IMAGE:PATH|INO`: the inode item,
// its names, xattrs and extents with every copy's device and offset.
func newInspectInodeCmd() *cobra.Command {
	c, fl, of := newCmd("inode [--json] IMAGE:PATH | IMAGE INO", "print an inode and its items", "  ddfs inspect inode disk.img:/etc/passwd\n  ddfs inspect inode --json disk.img 257\n")
	asJSON := fl.Bool("json", false, "print JSON")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout := c.OutOrStdout()
		var image, path string
		var ino uint64
		switch fl.NArg() {
		case 1:
			op := parseOperand(fl.Arg(0))
			if op.image == "" {
				return usageErr("want IMAGE:PATH or IMAGE INO")
			}
			image, path = op.image, op.path
		case 2:
			n, err := strconv.ParseUint(fl.Arg(1), 10, 64)
			if err != nil {
				return usageErr("INO %q is not a number", fl.Arg(1))
			}
			image, ino = fl.Arg(0), n
		default:
			return usageErr("want IMAGE:PATH or IMAGE INO")
		}
		fs, err := of.open(image, false)
		if err != nil {
			return err
		}
		defer fs.Close()
		if path != "" {
			if ino, err = inspect.Lookup(fs.Tree(format.FSTree), path); err != nil {
				return err
			}
		}
		d, err := inspect.Inode(fs, ino)
		if err != nil {
			return err
		}
		if *asJSON {
			return cli.JSON(stdout, d)
		}
		in := d.Item
		fmt.Fprintf(stdout, "inode %d mode %o nlink %d size %d nbytes %d uid %d gid %d flags %#x\n", d.Ino, in.Mode, in.Nlink, in.Size, in.NBytes, in.UID, in.GID, in.Flags)
		for _, n := range d.Names {
			fmt.Fprintf(stdout, "  name %q in %d index %d\n", n.Name, n.Parent, n.Index)
		}
		for _, x := range d.Xattrs {
			fmt.Fprintf(stdout, "  xattr %s\n", x)
		}
		for _, e := range d.Extents {
			x := e.Item
			fmt.Fprintf(stdout, "  extent at %d len %d disk %d+%d offset %d %v", e.Offset, x.Len(), x.DiskLogical, x.DiskLen, x.Offset, x.Compression)
			for _, c := range e.Copies {
				fmt.Fprintf(stdout, " copy %d devid %d offset %d", c.Copy, c.DevID, c.Offset)
			}
			fmt.Fprintln(stdout)
		}
		return nil
	}
	return c
}
