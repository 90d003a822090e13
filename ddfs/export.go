package main

// ddfs export (issue 41): a ddfs tree (of the live namespace or a
// snapshot) as a squashfs or ISO 9660 image, written by go-diskfs and
// read back before it is kept.

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/export"
	"github.com/ddfs/ddfs/pkg/units"
)

func newExportCmd() *cobra.Command {
	c, fl, of := newCmd("export IMAGE[@SNAPSHOT]:PATH OUT --type squashfs|iso9660 [--label L]\n\nWrites the tree at PATH as a new squashfs (zstd) or ISO 9660 (Rock Ridge) image file\nOUT with go-diskfs's writers, then reads OUT back through ddfs's own readers and\ncompares every entry, size, symlink target and byte with the tree: an image that\ndiffers is removed and the command fails. OUT must not exist. Modes, owners and\ntimes are the writer's to keep (squashfs keeps permissions and owners, ISO 9660\nwith Rock Ridge modes and owners); FAT is not written yet.",
		"write a tree as a squashfs or ISO 9660 image", "  ddfs export disk.img:/rootfs rootfs.squashfs --type squashfs\n  ddfs export disk.img:/seed seed.iso --type iso9660 --label cidata")
	typ := fl.String("type", "", "the image to write: "+strings.Join(export.Types, " or "))
	label := fl.String("label", "", "the volume label (ISO 9660's volume identifier)")
	quiet := fl.BoolP("quiet", "q", false, "print nothing on success")
	c.RunE = func(c *cobra.Command, args []string) error {
		if fl.NArg() != 2 {
			return usageErr("want IMAGE:PATH OUT")
		}
		if *typ == "" {
			return usageErr("--type is required (%s)", strings.Join(export.Types, " or "))
		}
		src := parseOperand(fl.Arg(0))
		if src.image == "" {
			return usageErr("%s: not in an image (use IMAGE:PATH)", fl.Arg(0))
		}
		im, err := of.openImage(src.image, false)
		if err != nil {
			return err
		}
		defer im.close()
		st, err := export.Export(im.f, abs(src.path), fl.Arg(1), export.Options{Type: *typ, Label: *label})
		if err != nil {
			return im.err(fmt.Errorf("%s: %w", fl.Arg(1), err))
		}
		if !*quiet {
			fmt.Fprintf(c.OutOrStdout(), "%s: %s image of %d entries, %s of data, read back and equal\n", fl.Arg(1), *typ, st.Entries, units.Human(st.Bytes))
		}
		return nil
	}
	return c
}
