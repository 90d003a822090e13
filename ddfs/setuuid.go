package main

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
)

const setUUIDExamples = `  ddfs set-uuid disk.img                         # a random new UUID
  ddfs set-uuid --device copy-b.img copy-a.img   # a copied set: name its devices
  ddfs set-uuid disk.img 8c9a3e3e-0000-4000-8000-000000000001
`

// cmdSetUUID gives a set a new filesystem UUID (FORMAT.md §3.8), like
// btrfstune -u: the way to use a copy of a set next to the original.
func newSetUUIDCmd() *cobra.Command {
	c, fl, of := newCmd("set-uuid [--json] IMAGE [UUID|random]\n\nRewrites every superblock and every tree node header with a new filesystem\nUUID; a crash at any point leaves the set usable under the old or the new one.\nWithout UUID it finishes an interrupted change (ddfs info shows \"new uuid\"),\nelse it picks a random UUID.", "give the set a new filesystem UUID (for a copied set)", setUUIDExamples)
	asJSON := fl.Bool("json", false, "print {\"old_uuid\", \"uuid\", \"nodes\", \"copies\", \"bad_copies\"} as JSON")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout := c.OutOrStdout()
		if fl.NArg() < 1 || fl.NArg() > 2 {
			return usageErr("want IMAGE [UUID|random]")
		}
		to := uuid.New()
		if fl.NArg() == 2 && fl.Arg(1) != "random" {
			u, err := uuid.Parse(fl.Arg(1))
			if err != nil {
				return usageErr("UUID %q: %v", fl.Arg(1), err)
			}
			to = u
		}
		fs, err := of.open(fl.Arg(0), true)
		if err != nil {
			return err
		}
		defer fs.Close()
		if pending := fs.Super().NewFSID; fl.NArg() == 1 && pending != ([16]byte{}) {
			to = pending // finish what an interrupted run started
		}
		res, err := fs.ChangeFSID(to)
		printStats(of.stats, inspect.IOStats(fs), 0, "", fs.HealStats())
		if err != nil {
			return fmt.Errorf("%s: %w", fl.Arg(0), err)
		}
		if *asJSON {
			return cli.JSON(stdout, struct {
				Old       string `json:"old_uuid"`
				New       string `json:"uuid"`
				Nodes     int    `json:"nodes"`
				Copies    int    `json:"copies"`
				BadCopies int    `json:"bad_copies"`
			}{uuid.UUID(res.Old).String(), uuid.UUID(res.New).String(), res.Nodes, res.Copies, res.BadCopies})
		}
		fmt.Fprintln(stdout, uuid.UUID(res.New))
		if res.BadCopies > 0 {
			return fmt.Errorf("%s: %d node copies did not validate and were left as they were (run fsck.ddfs)", fl.Arg(0), res.BadCopies)
		}
		return nil
	}
	return c
}
