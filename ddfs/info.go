package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/units"
)

func newInfoCmd() *cobra.Command {
	c, of, bf := newBatchCmd("info [--json] IMAGE... [--from FILE]", "show superblock, devices, chunks and tree roots",
		"  ddfs info disk.img\n  ddfs info --json disk.img | jq .chunks\n  ddfs info --json --from images.txt   # JSON Lines, one object per set\n  ddfs info disk.img                   # a foreign image: type, label, UUID, size, partitions")
	asJSON := c.Flags().Bool("json", false, "print JSON")
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 1 {
			if fim, err := openForeign(args[0]); fim != nil || err != nil {
				if err != nil {
					return err
				}
				defer fim.Close()
				return infoForeign(c.OutOrStdout(), fim, *asJSON)
			}
		}
		return eachSet(c, of, bf, args, *asJSON, func(fs *store.FS, w io.Writer, path string, inBatch bool) error {
			return runInfo(w, fs, path, inBatch, *asJSON)
		})
	}
	return c
}

func runInfo(stdout io.Writer, fs *store.FS, path string, inBatch, asJSON bool) error {
	info := inspect.GetInfo(fs)
	if asJSON {
		return printJSON(stdout, path, inBatch, info)
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
	fmt.Fprintf(stdout, "size:         %s (%s used)\n\ndevices:\n", units.Human(info.TotalBytes), units.Human(info.Used))
	for _, d := range info.Devices {
		fmt.Fprintf(stdout, "  devid %d  %s  size %s  allocated %s  rotational %v  seek_speed %d/s  bandwidth %s/s  tier %d  uuid %s\n",
			d.DevID, d.Path, units.Human(d.Size), units.Human(d.Allocated), d.Rotational, d.SeekSpeed, units.Human(d.Bandwidth), d.Tier, d.UUID)
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
