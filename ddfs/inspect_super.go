package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/volume"
)

// cmdDumpSuper is `ddfs inspect dump-super IMAGE`: every superblock copy
// of every device, valid or not.
func newDumpSuperCmd() *cobra.Command {
	c, fl, of := newCmd("dump-super [--json] IMAGE", "print the superblock", "  ddfs inspect dump-super disk.img\n")
	asJSON := fl.Bool("json", false, "print JSON")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout := c.OutOrStdout()
		if fl.NArg() != 1 {
			return usageErr("want exactly one IMAGE")
		}
		vol, err := volume.Open([]string{fl.Arg(0)}, volume.Options{Wait: of.wait, Extra: of.devices})
		if err != nil {
			return err
		}
		defer vol.Close()
		copies := inspect.DumpSuper(vol)
		if *asJSON {
			return cli.JSON(stdout, copies)
		}
		for _, c := range copies {
			fmt.Fprintf(stdout, "superblock devid %d %s offset %d", c.DevID, c.Path, c.Offset)
			if c.Error != "" {
				fmt.Fprintf(stdout, ": %s\n", c.Error)
				continue
			}
			fmt.Fprintf(stdout, "\n  uuid %s generation %d devices %d total %d used %d\n", c.UUID, c.Generation, c.NumDevices, c.TotalBytes, c.BytesUsed)
			for _, r := range c.Roots {
				fmt.Fprintf(stdout, "  root %-8s logical %d level %d generation %d\n", r.Tree, r.Logical, r.Level, r.Generation)
			}
			for _, b := range c.Backups {
				fmt.Fprintf(stdout, "  backup generation %d:", b.Generation)
				for _, r := range b.Roots {
					fmt.Fprintf(stdout, " %s@%d", r.Tree, r.Logical)
				}
				fmt.Fprintln(stdout)
			}
		}
		return nil
	}
	return c
}
