// Command ddfs works on a ddfs filesystem without mounting it.
package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"

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

// newRoot is the command tree; each command lives in its own file.
func newRoot() *cobra.Command {
	root := cli.NewRoot("ddfs", "work on a ddfs filesystem without mounting it", "")
	root.Long = "ddfs works on a ddfs filesystem without mounting it. Operands are IMAGE:PATH;\nIMAGE is any device of the set, the others are found next to it."
	root.Example = rootExamples
	cli.MakeGroup(root)
	root.AddCommand(newInfoCmd(), newDFCmd(), newLsCmd(), newCatCmd(), newStatCmd(), newCpCmd(),
		newMkdirCmd(), newRmCmd(), newMvCmd(), newLnCmd(), newTouchCmd(), newChmodCmd(), newChownCmd(),
		newDuCmd(), newXattrCmd(), newTarInCmd(), newTarOutCmd(), newPropCmd(), newDeviceCmd(),
		newBalanceCmd(), newScrubCmd(), newInspectCmd(), newSetUUIDCmd(), newFindCmd(), newDiffCmd(), newMountCmd())
	return root
}

const rootExamples = `  ddfs cp -r ./tree disk.img:/
  ddfs ls -l disk.img:/tree
  ddfs cat disk.img:/tree/README
  ddfs cp -a disk.img:/tree ./out
  ddfs tar-out disk.img | tar -tf -
  ddfs info disk.img
  ddfs df --json disk.img`
