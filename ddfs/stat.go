package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/attrspec"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// statJSON is `ddfs stat --json`.
type statJSON struct {
	Path   jstr        `json:"path"`
	Name   jstr        `json:"name"`
	Ino    uint64      `json:"ino"`
	Type   string      `json:"type"`
	Mode   string      `json:"mode"` // octal permission bits
	Nlink  uint32      `json:"nlink"`
	UID    uint32      `json:"uid"`
	GID    uint32      `json:"gid"`
	Size   uint64      `json:"size"`
	Bytes  uint64      `json:"bytes"` // bytes of extents referenced
	Rdev   uint64      `json:"rdev"`
	Atime  string      `json:"atime"`
	Mtime  string      `json:"mtime"`
	Ctime  string      `json:"ctime"`
	Btime  string      `json:"btime"`
	Target jstr        `json:"target,omitempty"`
	Xattrs []xattrJSON `json:"xattrs,omitempty"`
}

func newStatCmd() *cobra.Command {
	c, fl, of := newCmd("stat [--json] [-L] [-c FORMAT|--printf FORMAT] IMAGE:PATH...", "show inode details (--json)",
		"  ddfs stat disk.img:/etc/passwd\n  ddfs stat --json disk.img:/bin/ping | jq .xattrs\n"+
			"  ddfs stat -c '%a %U:%G %s %n' disk.img:/etc/shadow   # GNU stat format directives\n"+
			"  ddfs stat --printf '%i\\t%y\\n' disk.img:/etc/passwd\n"+
			"  ddfs stat --json cidata.iso:/user-data            # a foreign image, read-only\n")
	asJSON := fl.Bool("json", false, "print JSON (an array when several paths are given)")
	follow := fl.BoolP("dereference", "L", false, "follow a symbolic link named as an operand")
	cfmt := fl.StringP("format", "c", "", "print FORMAT for each operand, then a newline (GNU stat directives: %a %A %b %B %f %F %g %G %h %i %n %N %s %t %T %u %U %w %W %x %X %y %Y %z %Z ...)")
	pfmt := fl.String("printf", "", "as --format, with backslash escapes and no newline added")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout := c.OutOrStdout()
		if n := btoi(*asJSON) + btoi(c.Flags().Changed("format")) + btoi(c.Flags().Changed("printf")); n > 1 {
			return usageErr("--json, --format and --printf exclude each other")
		}
		if fim, paths, err := foreignOperands(args); fim != nil || err != nil {
			if err != nil {
				return err
			}
			defer fim.Close()
			if c.Flags().Changed("format") || c.Flags().Changed("printf") {
				return usageErr("-c/--printf on a foreign image is not supported yet (use --json)")
			}
			return statForeign(stdout, fim, paths, *follow, *asJSON)
		}
		im, paths, err := openOperands(of, args, false)
		if err != nil {
			return err
		}
		defer im.close()
		if paths, err = expandPaths(im, paths, nil); err != nil {
			return im.err(err)
		}
		var out []statJSON
		sf := &statFormat{img: im.name, accounts: func() (*attrspec.Accounts, error) { return accountsOf(im.f) }}
		for _, p := range paths {
			in, err := im.f.Resolve(p, *follow)
			if err != nil {
				return im.err(err)
			}
			if c.Flags().Changed("format") || c.Flags().Changed("printf") {
				if err := printStatFormat(stdout, sf, im.f, in, p, *cfmt, *pfmt, c.Flags().Changed("printf")); err != nil {
					return im.err(err)
				}
				continue
			}
			st, err := statOf(im.f, in, p, fsys.Base(p))
			if err != nil {
				return im.err(err)
			}
			out = append(out, st)
		}
		if *asJSON {
			if len(out) == 1 {
				return cli.JSON(stdout, out[0])
			}
			return cli.JSON(stdout, out)
		}
		printStatText(stdout, im.name, out)
		return nil
	}
	return c
}

// printStatText is stat's text form of each object, in image name.
func printStatText(stdout io.Writer, name string, out []statJSON) {
	for _, s := range out {
		fmt.Fprintf(stdout, "  File: %s:%s", name, string(s.Path))
		if s.Target != "" {
			fmt.Fprintf(stdout, " -> %s", string(s.Target))
		}
		fmt.Fprintf(stdout, "\n  Size: %-12d Bytes: %-12d %s\nInode: %-12d Links: %d\nAccess: (%s) Uid: %d Gid: %d\n", s.Size, s.Bytes, s.Type, s.Ino, s.Nlink, s.Mode, s.UID, s.GID)
		fmt.Fprintf(stdout, "Access: %s\nModify: %s\nChange: %s\n Birth: %s\n", s.Atime, s.Mtime, s.Ctime, s.Btime)
		for _, x := range s.Xattrs {
			fmt.Fprintf(stdout, " Xattr: %s=%s\n", string(x.Name), xattrText(string(x.Value)))
		}
	}
}

// printStatFormat prints one operand of stat -c/--printf.
func printStatFormat(w io.Writer, sf *statFormat, f *fsys.FS, in *fsys.Inode, p, cfmt, pfmt string, printf bool) error {
	var target string
	if in.IsSymlink() {
		t, err := f.Readlink(p)
		if err != nil {
			return err
		}
		target = t
	}
	var out string
	if printf {
		out = sf.expand(pfmt, true, p, in, target)
	} else {
		out = sf.expand(cfmt, false, p, in, target) + "\n"
	}
	if sf.err != nil {
		return sf.err
	}
	_, err := io.WriteString(w, out)
	return err
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// statOf is the JSON (and text) form of one inode at image path p.
func statOf(f *fsys.FS, in *fsys.Inode, p, name string) (statJSON, error) {
	s := statJSON{
		Path: jstr(p), Name: jstr(name), Ino: in.Ino, Type: fileType(in), Mode: fmt.Sprintf("%04o", in.Mode&0o7777), Nlink: in.Nlink,
		UID: in.UID, GID: in.GID, Size: in.Size, Bytes: in.NBytes, Rdev: in.Rdev,
		Atime: ts(in.Atime), Mtime: ts(in.Mtime), Ctime: ts(in.Ctime), Btime: ts(in.Btime),
	}
	if in.IsSymlink() {
		t, err := f.Readlink(p)
		if err != nil {
			return s, err
		}
		s.Target = jstr(t)
	}
	xs, err := xattrsJSON(f, in)
	s.Xattrs = xs
	return s, err
}

func ts(t format.Timespec) string { return fsys.Time(t).UTC().Format(time.RFC3339Nano) }

func fileType(in *fsys.Inode) string {
	switch format.FileTypeOfMode(in.Mode) {
	case format.FileTypeRegular:
		return "regular file"
	case format.FileTypeDir:
		return "directory"
	case format.FileTypeSymlink:
		return "symbolic link"
	case format.FileTypeCharDev:
		return "character special file"
	case format.FileTypeBlockDev:
		return "block special file"
	case format.FileTypeFIFO:
		return "fifo"
	case format.FileTypeSocket:
		return "socket"
	}
	return "unknown"
}
