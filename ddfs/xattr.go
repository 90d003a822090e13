package main

import (
	"fmt"
	"github.com/spf13/cobra"
	"strconv"
	"unicode/utf8"

	"github.com/ddfs/ddfs/pkg/cli"
)

func newXattrCmd() *cobra.Command {
	c, fl, of := newCmd("xattr get|set|list|rm IMAGE:PATH [NAME [VALUE]]", "get, set, list or remove extended attributes", "  ddfs xattr list disk.img:/bin/ping\n  ddfs xattr set disk.img:/f user.note hello\n  ddfs xattr get disk.img:/f user.note\n  ddfs xattr rm disk.img:/f user.note\n")
	asJSON := fl.Bool("json", false, "list: print JSON {name: value}")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout := c.OutOrStdout()
		a := fl.Args()
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
			xs, err := im.f.ListXattrs(in)
			if err != nil {
				im.close()
				return im.err(err)
			}
			if *asJSON {
				m := map[string]string{}
				for _, x := range xs {
					m[x.Name] = string(x.Value)
				}
				im.close()
				return cli.JSON(stdout, m)
			}
			for _, x := range xs {
				v := string(x.Value)
				if !utf8.Valid(x.Value) {
					v = fmt.Sprintf("%x", x.Value)
				}
				fmt.Fprintf(stdout, "%s=%s\n", x.Name, strconv.Quote(v))
			}
		case "set":
			err = im.f.SetXattr(in, a[2], []byte(a[3]))
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
