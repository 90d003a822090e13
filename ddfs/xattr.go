package main

import (
	"fmt"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/fsys"
)

func newXattrCmd() *cobra.Command {
	c, fl, of := newCmd("xattr get|set|list|rm IMAGE:PATH [NAME [VALUE]]\n\nlist prints values as getfattr does: \"text\", or 0s and base64 when not text.\nset reads VALUE as setfattr -v does: 0x and hex digits, 0s and base64,\n\"text\" with \\\\, \\\" and \\ooo escapes, or else the text as given.\nPOSIX ACLs (system.posix_acl_access, system.posix_acl_default) are not\nsupported: set refuses them (chmod sets the mode).", "get, set, list or remove extended attributes", "  ddfs xattr list disk.img:/bin/ping\n  ddfs xattr set disk.img:/f user.note hello\n  ddfs xattr get disk.img:/f user.note\n  ddfs xattr rm disk.img:/f user.note\n")
	asJSON := fl.Bool("json", false, "list: print JSON [{name, value}] (values that are not UTF-8 as {\"base64\": ...})")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout := c.OutOrStdout()
		a := fl.Args()
		if len(a) > 0 {
			if err := cli.Verb(a[0], "get", "set", "list", "rm"); err != nil {
				return err
			}
		}
		if len(a) < 2 {
			return usageErr("want get|set|list|rm IMAGE:PATH ...")
		}
		want := map[string]int{"get": 3, "set": 4, "list": 2, "rm": 3}
		n, ok := want[a[0]]
		if !ok || len(a) != n {
			return usageErr("usage: xattr get|set|list|rm IMAGE:PATH [NAME [VALUE]]")
		}
		img, paths, err := imageOperands(a[1:2])
		if err != nil {
			return err
		}
		if a[0] == "set" && fsys.IsACLXattr(a[2]) { // as on a mount: chmod sets the mode
			return fmt.Errorf("%s:%s: %s: %w", img, paths[0], a[2], fsys.ErrNoACL)
		}
		write := a[0] == "set" || a[0] == "rm"
		im, err := of.openImage(img, write)
		if err != nil {
			return err
		}
		in, err := im.f.Resolve(paths[0], false)
		if err != nil {
			im.close()
			return im.err(err)
		}
		switch a[0] {
		case "get":
			v, err := im.f.GetXattr(in, a[2])
			if err != nil {
				im.close()
				return im.err(pathErrOf("getxattr", paths[0], err))
			}
			stdout.Write(v)
			if utf8.Valid(v) {
				fmt.Fprintln(stdout)
			}
		case "list":
			xs, err := xattrsJSON(im.f, in)
			if err != nil {
				im.close()
				return im.err(err)
			}
			if *asJSON {
				im.close()
				if xs == nil {
					xs = []xattrJSON{}
				}
				return cli.JSON(stdout, xs)
			}
			for _, x := range xs {
				fmt.Fprintf(stdout, "%s=%s\n", string(x.Name), xattrText(string(x.Value)))
			}
		case "set":
			var v []byte
			if v, err = xattrValue(a[3]); err == nil {
				err = im.f.SetXattr(in, a[2], v)
			}
		case "rm":
			err = im.f.RemoveXattr(in, a[2])
		}
		if err != nil {
			im.f.Abort()
			im.close()
			return im.err(pathErrOf("xattr", paths[0], err))
		}
		return im.close()
	}
	return c
}
