package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/units"
)

func newInfoCmd() *cobra.Command {
	c, fl, of := newCmd("info [--json] IMAGE", "show superblock, devices, chunks and tree roots", "  ddfs info disk.img\n  ddfs info --json disk.img | jq .chunks")
	asJSON := fl.Bool("json", false, "print JSON")
	c.RunE = func(c *cobra.Command, args []string) error {
		return runInfo(c.OutOrStdout(), of, args, *asJSON)
	}
	return c
}

func runInfo(stdout io.Writer, of *openFlags, args []string, asJSON bool) error {
	fs, done, err := of.openOnly(args)
	if err != nil {
		return err
	}
	defer done()
	info := inspect.GetInfo(fs)
	if asJSON {
		return cli.JSON(stdout, info)
	}
	label := info.Label
	if label == "" {
		label = "(none)"
	}
	fmt.Fprintf(stdout, "uuid:         %s\nlabel:        %s\ngeneration:   %d\nversion:      %d\n", info.UUID, label, info.Generation, info.Version)
	if info.NewUUID != "" {
		fmt.Fprintf(stdout, "new uuid:     %s (set-uuid was interrupted; run it again to finish)\n", info.NewUUID)
	}
	fmt.Fprintf(stdout, "nodesize:     %d\nsectorsize:   %d\ncsum:         %s\nalloc policy: %s\n", info.NodeSize, info.SectorSize, info.Csum, info.AllocPolicy)
	fmt.Fprintf(stdout, "features:     compat 0x%x ro_compat 0x%x incompat 0x%x\n", info.Compat, info.RoCompat, info.Incompat)
	fmt.Fprintf(stdout, "size:         %s (%s used)\n\ndevices:\n", units.Human(info.TotalBytes), units.Human(info.BytesUsed))
	for _, d := range info.Devices {
		fmt.Fprintf(stdout, "  devid %d  %s  size %s  used %s  rotational %v  seek_speed %d/s  bandwidth %s/s  uuid %s\n",
			d.DevID, d.Path, units.Human(d.Size), units.Human(d.Used), d.Rotational, d.SeekSpeed, units.Human(d.Bandwidth), d.UUID)
	}
	fmt.Fprintf(stdout, "\nchunks:\n")
	for _, c := range info.Chunks {
		fmt.Fprintf(stdout, "  logical %d  length %s  %s/%s  used %s  stripes", c.Logical, units.Human(c.Length), c.Type, c.Profile, units.Human(c.Used))
		for _, s := range c.Stripes {
			fmt.Fprintf(stdout, " %d@%d", s.DevID, s.Offset)
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintf(stdout, "\nroots:\n")
	for _, r := range info.Roots {
		fmt.Fprintf(stdout, "  %-10s logical %d  level %d  generation %d\n", r.Tree, r.Logical, r.Level, r.Generation)
	}
	return nil
}
