package main

import (
	"fmt"
	"path"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/fsys"
)

func newDuCmd() *cobra.Command {
	c, fl, of := newCmd("du [-s] [-h] IMAGE:PATH...", "show space used by files", "  ddfs du -sh disk.img:/usr\n")
	cli.NoHelpShorthand(c)
	summary := fl.BoolP("summarize", "s", false, "only a total for each argument")
	human := fl.BoolP("human-readable", "h", false, "sizes with K, M, G")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout := c.OutOrStdout()
		im, paths, err := openOperands(of, args, false)
		if err != nil {
			return err
		}
		defer im.close()
		for _, p := range paths {
			in, err := im.f.Resolve(p, false)
			if err != nil {
				return im.err(err)
			}
			seen := map[uint64]bool{}
			var bad fsys.Refused // entries fsck flags: not counted, the error at the end
			var walk func(in *fsys.Inode, p string) (uint64, error)
			walk = func(in *fsys.Inode, p string) (uint64, error) {
				total := in.NBytes
				if !in.IsDir() {
					if seen[in.Ino] { // count hard links once, as du does
						return 0, nil
					}
					seen[in.Ino] = true
					return total, nil
				}
				kids, err := im.f.Children(in)
				if err := bad.Note(p, err); err != nil {
					return 0, err
				}
				for _, k := range kids {
					n, err := walk(k.Inode, path.Join(p, k.Entry.Name))
					if err != nil {
						return 0, err
					}
					total += n
				}
				if !*summary {
					fmt.Fprintf(stdout, "%s\t%s:%s\n", sizeString(total, *human), im.name, p)
				}
				return total, nil
			}
			total, err := walk(in, p)
			if err != nil {
				return im.err(err)
			}
			if *summary || !in.IsDir() {
				fmt.Fprintf(stdout, "%s\t%s:%s\n", sizeString(total, *human), im.name, p)
			}
			if err := bad.Done(nil); err != nil {
				return im.err(err)
			}
		}
		return nil
	}
	return c
}
