package main

// ddfs export (issue 41): a ddfs tree (of the live namespace or a
// snapshot) as a squashfs (our writer), ISO 9660 or FAT32 (go-diskfs's)
// image, read back before it is kept.

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/export"
	"github.com/ddfs/ddfs/pkg/units"
)

func newExportCmd() *cobra.Command {
	c, fl, of := newCmd("export IMAGE[@SNAPSHOT]:PATH OUT --type squashfs|iso9660|fat32 [--label L] [--size S]\n\nWrites the tree at PATH as a new squashfs (gzip), ISO 9660 (Rock Ridge) or FAT32 image\nfile OUT, then reads OUT back through ddfs's own readers and\ncompares every entry, size, symlink target and byte with the tree: an image that\ndiffers is removed and the command fails. OUT must not exist. Modes, owners and\ntimes are the format's to keep: squashfs keeps modes with set-ID bits, owners,\nmtimes, hard links and user./trusted./security. xattrs (its read-back compares them;\nany other xattr, an ACL, is refused), ISO 9660 with Rock Ridge modes and owners, FAT\nmodification times to 2 s. FAT holds\ndirectories and regular files under 4 GiB only, with names that ignore case: a tree\nwith a symlink, a device node, two names differing only in case or sharing an 8.3\nname, or a name FAT cannot keep is refused, naming the path, before OUT is made. A FAT image is as big\nas --size, or as the tree needs (64 MiB at least). With SOURCE_DATE_EPOCH set, two\nexports of one tree are the same bytes.",
		"write a tree as a squashfs, ISO 9660 or FAT32 image", "  ddfs export disk.img:/rootfs rootfs.squashfs --type squashfs\n  ddfs export disk.img:/seed seed.iso --type iso9660 --label cidata\n  ddfs export disk.img:/boot/efi esp.img --type fat32 --label EFI --size 256M")
	typ := fl.String("type", "", "the image to write: "+strings.Join(export.Types, " or "))
	label := fl.String("label", "", "the volume label (ISO 9660's volume identifier, FAT's label)")
	sizeArg := fl.String("size", "", "fat32: the image's size (K, M, G suffixes; default: what the tree needs)")
	quiet := fl.BoolP("quiet", "q", false, "print nothing on success")
	asJSON := fl.Bool("json", false, `print {"path", "type", "entries", "data_bytes"} as JSON`)
	c.RunE = func(c *cobra.Command, args []string) error {
		if fl.NArg() != 2 {
			return usageErr("want IMAGE:PATH OUT")
		}
		if *typ == "" {
			return usageErr("--type is required (%s)", strings.Join(export.Types, " or "))
		}
		var size uint64
		if *sizeArg != "" {
			if *typ != "fat32" {
				return usageErr("--size is for --type fat32 (squashfs and ISO 9660 are as big as their files)")
			}
			var err error
			if size, err = units.ParseSize(*sizeArg); err != nil || size > 1<<50 {
				return usageErr("--size %q: want a size such as 256M", *sizeArg)
			}
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
		st, err := export.Export(im.f, abs(src.path), fl.Arg(1), export.Options{Type: *typ, Label: *label, Size: int64(size)})
		if err != nil {
			return im.err(fmt.Errorf("%s: %w", fl.Arg(1), err))
		}
		switch {
		case *asJSON:
			return cli.JSON(c.OutOrStdout(), struct {
				Path string `json:"path"`
				Type string `json:"type"`
				export.Stats
			}{fl.Arg(1), *typ, st})
		case !*quiet:
			fmt.Fprintf(c.OutOrStdout(), "%s: %s image of %d entries, %s of data, read back and equal\n", fl.Arg(1), *typ, st.Entries, units.Human(st.Bytes))
		}
		return nil
	}
	return c
}
