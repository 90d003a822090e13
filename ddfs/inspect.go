package main

import (
	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
)

// newInspectCmd is `ddfs inspect dump-super|dump-tree|map|inode ...`
// (as btrfs inspect-internal); each subcommand has its own file.
func newInspectCmd() *cobra.Command {
	c := cli.NewGroup("inspect", "dump-super, dump-tree, map, inode: on-disk structures (as btrfs inspect-internal)",
		"  ddfs inspect dump-super disk.img\n  ddfs inspect dump-tree --tree fs disk.img")
	c.AddCommand(newDumpSuperCmd(), newDumpTreeCmd(), newMapCmd(), newInspectInodeCmd())
	return c
}
