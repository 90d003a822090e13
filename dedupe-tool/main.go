// Command dedupe-tool manages dedupe of a ddfs image: inband settings and
// status, estimates on any data, offline dedupe and the index.
package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ddfs/ddfs/pkg/cli"
)

func main() {
	cli.SoftMemoryLimit(160 << 20)
	stop := cli.Profile()
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(args []string, stdout, stderr io.Writer) int {
	return cli.Execute(newRoot(), args, stdout, stderr)
}

// extraDevices are the --device flags: the other members of the set.
var extraDevices []string

// newRoot is the command tree; each command lives in its own file.
func newRoot() *cobra.Command {
	root := cli.NewRoot("dedupe-tool", "manage dedupe of a ddfs image: settings, status, estimates, offline dedupe, the index", "V")
	root.Example = `  dedupe-tool status --json backup.img
  dedupe-tool enable --block 64K --hash blake3 backup.img
  dedupe-tool estimate --json ./backups
  dedupe-tool run --json backup.img`
	cli.MakeGroup(root)
	root.PersistentFlags().StringArrayVar(&extraDevices, "device", nil, "another device of the set (repeatable): members outside the image's folder, such as nbd:// exports")
	root.AddCommand(newStatusCmd(), newEnableCmd(), newDisableCmd(), newEstimateCmd(), newRunCmd(), newIndexCmd())
	return root
}

// newCmd makes a subcommand (use: its synopsis).
func newCmd(use, short, examples string) (*cobra.Command, *pflag.FlagSet) {
	c := cli.NewCommand(use, short, examples)
	return c, c.Flags()
}
