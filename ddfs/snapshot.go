package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/units"
)

const snapshotExamples = `  ddfs snapshot create disk.img before-upgrade
  ddfs snapshot list disk.img
  ddfs snapshot list --json disk.img
  ddfs rollback disk.img before-upgrade
  ddfs snapshot delete disk.img before-upgrade`

// newSnapshotCmd groups the snapshot commands (FORMAT.md §6.12), as
// btrfs subvolume snapshot/list/delete and zfs snapshot/destroy do.
func newSnapshotCmd() *cobra.Command {
	c := cli.NewCommand("snapshot", "make, list and delete read-only snapshots of the namespace", snapshotExamples)
	c.AddCommand(newSnapshotCreateCmd(), newSnapshotListCmd(), newSnapshotDeleteCmd())
	return c
}

func newSnapshotCreateCmd() *cobra.Command {
	return namedSnapshotCmd("create IMAGE NAME\n\nKeeps the namespace as it is now, read-only, under NAME: one commit, whatever the\nnumber of files. Space the live files then stop using stays with the snapshot until\nit is deleted. fsck.ddfs checks snapshots; it repairs only copies and superblocks of\nan image that has them.", "make a snapshot",
		func(f *fsys.FS, name string) error { _, err := f.CreateSnapshot(name); return err })
}

// namedSnapshotCmd is a command IMAGE NAME that runs op on the opened
// image (commits it when op succeeds).
func namedSnapshotCmd(use, short string, op func(f *fsys.FS, name string) error) *cobra.Command {
	c, fl, of := newCmd(use, short, snapshotExamples)
	c.RunE = func(c *cobra.Command, args []string) error {
		if fl.NArg() != 2 {
			return usageErr("want IMAGE NAME")
		}
		im, err := of.openImage(fl.Arg(0), true)
		if err != nil {
			return err
		}
		if err := op(im.f, fl.Arg(1)); err != nil {
			im.close()
			return fmt.Errorf("%s: %w", fl.Arg(0), err)
		}
		return im.close()
	}
	return c
}

func newSnapshotListCmd() *cobra.Command {
	c, fl, of := newCmd("list [--json] IMAGE", "list the snapshots", snapshotExamples)
	asJSON := fl.Bool("json", false, `print {"snapshots": [{"id", "name", "uuid", "generation", "ctime", "referenced_bytes", "exclusive_bytes"}]} as JSON`)
	c.RunE = func(c *cobra.Command, args []string) error {
		if fl.NArg() != 1 {
			return usageErr("want IMAGE")
		}
		im, err := of.openImage(fl.Arg(0), false)
		if err != nil {
			return err
		}
		defer im.close()
		snaps, err := im.f.Snapshots()
		if err != nil {
			return fmt.Errorf("%s: %w", fl.Arg(0), err)
		}
		type row struct {
			ID         uint64 `json:"id"`
			Name       string `json:"name"`
			UUID       string `json:"uuid"`
			Generation uint64 `json:"generation"`
			Ctime      string `json:"ctime"`
			store.SnapshotSpace
			// ReceivedUUID: the sent snapshot's, for one ddfs receive made.
			ReceivedUUID string `json:"received_uuid,omitempty"`
		}
		roots := make([]format.RootPtr, len(snaps))
		for i, s := range snaps {
			roots[i] = s.Root
		}
		spaces, err := im.f.Store().Spaces(roots) // nodes the snapshots share read once
		if err != nil {
			for _, s := range snaps { // name the snapshot whose tree fails
				if _, serr := im.f.Store().Space(s.Root); serr != nil {
					return fmt.Errorf("%s@%s: %w", fl.Arg(0), s.Name, serr)
				}
			}
			return fmt.Errorf("%s: %w", fl.Arg(0), err)
		}
		rows := []row{}
		for i, s := range snaps {
			r := row{s.ID, s.Name, uuid.UUID(s.UUID).String(), s.Generation, ts(s.Ctime), spaces[i], ""}
			if s.ReceivedUUID != [16]byte{} {
				r.ReceivedUUID = uuid.UUID(s.ReceivedUUID).String()
			}
			rows = append(rows, r)
		}
		if *asJSON {
			return cli.JSON(c.OutOrStdout(), struct {
				Snapshots []row `json:"snapshots"`
			}{rows})
		}
		w := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tNAME\tGENERATION\tCREATED\tREFERENCED\tEXCLUSIVE\tUUID")
		for _, r := range rows {
			fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%s\t%s\t%s\n", r.ID, shellQuote(r.Name), r.Generation, r.Ctime, units.Human(r.Referenced), units.Human(r.Exclusive), r.UUID)
		}
		return w.Flush()
	}
	return c
}

func newSnapshotDeleteCmd() *cobra.Command {
	c, fl, of := newCmd("delete IMAGE NAME...\n\nFrees what only the snapshot kept (trimtool then gives it back to the host). The\nsnapshot goes in one commit; its tree is then freed in bounded commits, so memory\nstays small however many files it held, and a kill or power cut loses nothing: the\nnext command that writes the image finishes the job.", "delete snapshots", snapshotExamples)
	c.RunE = func(c *cobra.Command, args []string) error {
		if fl.NArg() < 2 {
			return usageErr("want IMAGE NAME...")
		}
		im, err := of.openImage(fl.Arg(0), true)
		if err != nil {
			return err
		}
		for _, name := range fl.Args()[1:] {
			if err := im.f.DeleteSnapshot(name); err != nil {
				im.close()
				return fmt.Errorf("%s: %w", fl.Arg(0), err)
			}
		}
		return im.close()
	}
	return c
}

func newRollbackCmd() *cobra.Command {
	return namedSnapshotCmd("rollback IMAGE NAME\n\nThe live namespace becomes snapshot NAME's; what only the replaced namespace held is\nfreed. The snapshot stays, and so do later ones.", "make the live namespace a snapshot's again",
		(*fsys.FS).Rollback)
}
