package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
)

// cmdMap is `ddfs inspect map IMAGE LOGICAL`: the device and offset of
// every copy (numbered from 0, as fsck numbers them).
func newMapCmd() *cobra.Command {
	c, fl, of := newCmd("map [--json] IMAGE LOGICAL", "map a logical address to its device copies", "  ddfs inspect map disk.img 30408704\n")
	asJSON := fl.Bool("json", false, "print JSON")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout := c.OutOrStdout()
		if fl.NArg() != 2 {
			return usageErr("want IMAGE LOGICAL")
		}
		logical, err := strconv.ParseUint(fl.Arg(1), 0, 64)
		if err != nil {
			return usageErr("LOGICAL %q is not a number", fl.Arg(1))
		}
		fs, err := of.open(fl.Arg(0), false)
		if err != nil {
			return err
		}
		defer fs.Close()
		m, err := inspect.Map(fs.Vol, logical)
		if err != nil {
			return err
		}
		if *asJSON {
			return cli.JSON(stdout, m)
		}
		fmt.Fprintf(stdout, "logical %d in %s/%s chunk %d\n", m.Logical, m.ChunkType, m.Profile, m.ChunkLogical)
		for _, c := range m.Copies {
			fmt.Fprintf(stdout, "  copy %d devid %d %s offset %d\n", c.Copy, c.DevID, c.Path, c.Offset)
		}
		return nil
	}
	return c
}
