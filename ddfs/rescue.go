package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/rescue"
	"github.com/ddfs/ddfs/pkg/units"
	"github.com/ddfs/ddfs/pkg/volume"
)

const rescueExamples = `  ddfs rescue disk.img ./salvage            # copy out what reads, list what does not
  ddfs rescue -v --json disk.img ./salvage  # name each file on stderr, the report as JSON
  ddfs rescue --degraded a.img ./salvage    # a mirror member gone: read the surviving copies
`

const rescueLong = `rescue IMAGE DIR [--degraded] [--json] [-v] [-q]

Copies everything readable out of a damaged image into the host folder DIR
(made if missing) without writing to the image, as btrfs restore does. The fs
tree's root is taken from the superblock, else from its backup root sets
(newest first), and whatever does not read is made up from the tree's leaves a
scan of the metadata finds (btrfs-find-root). Files keep modes, owners (as
root), times and the xattrs the host takes, as cp -a; hard links stay links;
inodes no entry reaches go back to their INODE_REF name, else to
DIR/lost+found/INO. File data is verified against
its checksums, every copy tried: a file with a sector no copy verifies is not
written. Existing entries of DIR are never overwritten (btrfs restore without
-o) and are listed; existing folders are merged into.

Each entry not restored is one line on stderr (IMAGE:PATH: reason), and the
report (files, bytes, where the roots came from) ends on stdout.`

func newRescueCmd() *cobra.Command {
	c := cli.NewCommand(rescueLong, "copy everything readable out of a damaged image", rescueExamples)
	c.ValidArgsFunction = completeOperand
	c.Annotations = map[string]string{cli.ExitCodesKey: "0 everything read and copied, 1 something not restored (listed) or an error, 2 usage error"}
	fl := c.Flags()
	devices := fl.StringArray("device", nil, "another device of the set (repeatable)")
	degraded := fl.Bool("degraded", false, "open a mirrored set with a device missing or unusable (reads use the surviving copies)")
	asJSON := fl.Bool("json", false, "print the report as JSON")
	verbose := fl.BoolP("verbose", "v", false, "name each file as it is copied (stderr)")
	quiet := fl.BoolP("quiet", "q", false, "no report, only the entries not restored")
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) != 2 {
			return usageErr("want IMAGE and DIR")
		}
		img, dir := args[0], args[1]
		vol, err := volume.Open([]string{img}, volume.Options{Extra: *devices, Degraded: *degraded})
		if err != nil {
			return cli.NameImage(img, err)
		}
		opt := rescue.Options{Degraded: *degraded}
		if *verbose {
			opt.Copied = func(p string) { fmt.Fprintf(c.ErrOrStderr(), "%s:%s\n", img, p) }
		}
		rep, err := rescue.Run(vol, dir, opt)
		vol.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", img, err)
		}
		for _, p := range rep.Problems {
			fmt.Fprintf(c.ErrOrStderr(), "%s: %s\n", cli.Prog(c), problemLine(img, p))
		}
		if err := printRescue(c.OutOrStdout(), img, rep, *asJSON, *quiet); err != nil {
			return err
		}
		if len(rep.Problems) > 0 {
			return &cli.CodeError{Code: cli.ExitError}
		}
		return nil
	}
	return c
}

// problemLine is IMAGE:PATH: reason, or IMAGE: inode N: reason.
func problemLine(img string, p rescue.Problem) string {
	switch {
	case p.Path != "":
		return fmt.Sprintf("%s:%s: %v", img, p.Path, p.Err)
	case p.Ino != 0:
		return fmt.Sprintf("%s: inode %d: %v", img, p.Ino, p.Err)
	}
	return fmt.Sprintf("%s: %v", img, p.Err)
}

// rescueJSON is the report in docs/json.md's vocabulary.
type rescueJSON struct {
	RootsFrom  string        `json:"roots_from"`
	Generation uint64        `json:"generation"`
	Files      int           `json:"files"`
	Dirs       int           `json:"dirs"`
	Symlinks   int           `json:"symlinks"`
	HardLinks  int           `json:"hard_links"`
	Specials   int           `json:"specials"`
	Bytes      uint64        `json:"bytes"`
	LostFound  int           `json:"lost_found"`
	NodesLost  int           `json:"nodes_lost"`
	NotRead    []notReadJSON `json:"not_read"`
}

type notReadJSON struct {
	Path  jstr   `json:"path,omitempty"`
	Ino   uint64 `json:"ino,omitempty"`
	Error string `json:"error"`
}

func printRescue(w io.Writer, img string, rep *rescue.Report, asJSON, quiet bool) error {
	if asJSON {
		j := rescueJSON{rep.RootsFrom, rep.Generation, rep.Files, rep.Dirs, rep.Symlinks, rep.HardLinks, rep.Specials,
			rep.Bytes, rep.LostFound, rep.NodesLost, []notReadJSON{}}
		for _, p := range rep.Problems {
			j.NotRead = append(j.NotRead, notReadJSON{jstr(p.Path), p.Ino, p.Err.Error()})
		}
		return cli.JSON(w, j)
	}
	if quiet {
		return nil
	}
	_, err := fmt.Fprintf(w, "rescue %s: %d files (%s), %d folders, %d symlinks, %d hard links, %d special files; %d in lost+found; fs tree from the %s (generation %d); %d not restored\n",
		img, rep.Files, units.Human(rep.Bytes), rep.Dirs, rep.Symlinks, rep.HardLinks, rep.Specials, rep.LostFound, rep.RootsFrom, rep.Generation, len(rep.Problems))
	return err
}
