package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
)

// cmdMap is `ddfs inspect map IMAGE LOGICAL`: the device and offset of
// every copy (numbered from 0, as fsck numbers them).
func cmdMap(args []string, stdout io.Writer) error {
	fl, of := newCmd("inspect map", "inspect map [--json] IMAGE LOGICAL", "  ddfs inspect map disk.img 30408704\n", stdout)
	asJSON := fl.Bool("json", false, "print JSON")
	if err := parseFlags(fl, args); err != nil {
		return err
	}
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
