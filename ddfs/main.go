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
	root := cli.NewRoot("ddfs", "work on a ddfs filesystem without mounting it", "V")
	root.Long = "ddfs works on a ddfs filesystem without mounting it. Operands are IMAGE:PATH;\nIMAGE is any device of the set, the others are found next to it. IMAGE is the text\nup to the first colon where it names an existing file (co:lon.img:/x, when no file\nco exists); a ./ prefix makes a host path (./x:y). A quoted image path with *, ?\nor [...] is a pattern where it names what exists (the sources of cp and mv, cat,\nls, stat, rm, du, find, chmod, chown), never where it names what to make (touch,\nmkdir, ln, the targets of cp, mv and tar-in). IMAGE@NAME:PATH reads snapshot NAME\nof IMAGE (ls, cat, stat, cp and tar-out sources, find, du, diff, mount -o ro); a\nwrite to it fails with EROFS. disk.img@N is partition N when the disk has one."
	root.Example = rootExamples
	cli.MakeGroup(root)
	root.AddCommand(newInfoCmd(), newDFCmd(), newLsCmd(), newCatCmd(), newStatCmd(), newCpCmd(),
		newMkdirCmd(), newRmCmd(), newMvCmd(), newLnCmd(), newTouchCmd(), newChmodCmd(), newChownCmd(),
		newDuCmd(), newXattrCmd(), newTarInCmd(), newTarOutCmd(), newPropCmd(), newDeviceCmd(),
		newBalanceCmd(), newScrubCmd(), newInspectCmd(), newSetUUIDCmd(), newFindCmd(), newDiffCmd(), newMountCmd(),
		newRescueCmd(), newSnapshotCmd(), newRollbackCmd(), newSendCmd(), newReceiveCmd(), newExportCmd())
	return root
}

const rootExamples = `  ddfs cp -r ./tree disk.img:/
  ddfs ls -l disk.img:/tree
  ddfs cat disk.img:/tree/README
  ddfs cp -a disk.img:/tree ./out
  ddfs tar-out disk.img | tar -tf -
  ddfs info disk.img
  ddfs df --json disk.img`
