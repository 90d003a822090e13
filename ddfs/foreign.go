package main

// Foreign images (issue 41, read access): an IMAGE that is no ddfs image
// but holds ext4, squashfs, ISO 9660 or FAT (or a partition table:
// IMAGE@N) is read through pkg/foreign by ls, cat, stat, cp (out, and
// into a ddfs image: foreign_import.go), tar-out and info; every other
// command refuses it (open.go).

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/foreign"
	"github.com/ddfs/ddfs/pkg/units"
)

// openForeign opens img when it holds a foreign filesystem; nil (and no
// error) when it is a ddfs image, remote, missing or busy, which the
// ddfs path reports as before. A foreign image go-diskfs cannot read is
// an error.
func openForeign(img string) (*foreign.Image, error) {
	if img == "" || device.IsRemote(img) {
		return nil, nil
	}
	fim, err := foreign.Open(img)
	switch {
	case err == nil:
		return fim, nil
	case errors.Is(err, foreign.ErrCorrupt), errors.Is(err, foreign.ErrUnsupported):
		return nil, plainErr(err)
	}
	return nil, nil
}

// foreignRefusal is the error of a command that does not read foreign
// images yet, or would change one (EROFS naming the format), when image
// is one; nil when it is not (the ddfs error stands).
func foreignRefusal(image string, write bool, c *cobra.Command) error {
	fim, err := openForeign(image)
	if fim == nil {
		return err
	}
	k := fim.Kind()
	fim.Close()
	cmd := "this command"
	if c != nil {
		cmd = c.Name()
	}
	if write {
		return foreign.ReadOnly(k, image)
	}
	return fmt.Errorf("%s: %s image: %s does not read foreign images yet (ls, cat, stat, cp, tar-out, diff, find, du and info do): %w", image, k, cmd, foreign.ErrUnsupported)
}

// foreignOperands opens the image of IMAGE:PATH operands when it is a
// foreign one (nil otherwise).
func foreignOperands(args []string) (*foreign.Image, []string, error) {
	img, paths, err := imageOperands(args)
	if err != nil || len(paths) == 0 {
		return nil, nil, nil
	}
	fim, err := openForeign(img)
	if fim == nil || err != nil {
		return nil, nil, err
	}
	if !fim.Kind().IsFilesystem() {
		fim.Close()
		return nil, nil, fmt.Errorf("%s: %w (ddfs info %s lists them)", img, foreign.ErrPartitionTable, img)
	}
	return fim, paths, nil
}

// plainErr puts a foreign error in the CLI's form IMAGE:PATH: reason
// (a PathError's op dropped, its chain kept for errors.Is).
func plainErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		var errno syscall.Errno
		if errors.As(pe.Err, &errno) {
			return pe // cli.Plain prints "IMAGE:PATH: Reason"
		}
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

// foreignStat is stat --json's object of a foreign file: the same keys,
// with zero for what the format does not keep (bytes is not known).
func foreignStat(st *foreign.Stat, p, name string) statJSON {
	t := func(x time.Time) string {
		if x.IsZero() {
			return time.Unix(0, 0).UTC().Format(time.RFC3339Nano)
		}
		return x.UTC().Format(time.RFC3339Nano)
	}
	return statJSON{
		Path: jstr(p), Name: jstr(name), Ino: st.Ino, Type: modeType(st.Mode), Mode: fmt.Sprintf("%04o", st.Mode&0o7777),
		Nlink: st.Nlink, UID: st.UID, GID: st.GID, Size: uint64(st.Size), Rdev: st.Rdev,
		Atime: t(st.Atime), Mtime: t(st.Mtime), Ctime: t(st.Ctime), Btime: t(st.Btime), Target: jstr(st.Target),
	}
}

func modeType(m uint32) string {
	switch m & syscall.S_IFMT {
	case syscall.S_IFREG:
		return "regular file"
	case syscall.S_IFDIR:
		return "directory"
	case syscall.S_IFLNK:
		return "symbolic link"
	case syscall.S_IFCHR:
		return "character special file"
	case syscall.S_IFBLK:
		return "block special file"
	case syscall.S_IFIFO:
		return "fifo"
	case syscall.S_IFSOCK:
		return "socket"
	}
	return "unknown"
}

// statForeign is ddfs stat on a foreign image.
func statForeign(w io.Writer, fim *foreign.Image, paths []string, follow, asJSON bool) error {
	var out []statJSON
	for _, p := range paths {
		lookup := fim.Lstat
		if follow {
			lookup = fim.Stat
		}
		st, err := lookup(p)
		if err != nil {
			return plainErr(err)
		}
		out = append(out, foreignStat(st, p, path.Base(p)))
	}
	if asJSON {
		if len(out) == 1 {
			return cli.JSON(w, out[0])
		}
		return cli.JSON(w, out)
	}
	printStatText(w, fim.Name(), out)
	return nil
}

// catForeign is ddfs cat on a foreign image.
func catForeign(w io.Writer, fim *foreign.Image, paths []string) error {
	buf := make([]byte, 1<<20)
	for _, p := range paths {
		f, err := fim.Open(p)
		if err != nil {
			return plainErr(err)
		}
		_, err = io.CopyBuffer(w, struct{ io.Reader }{f}, buf)
		f.Close()
		if err != nil {
			return plainErr(err)
		}
	}
	return nil
}

// lsForeign is ddfs ls on a foreign image: -l shows numeric owners (the
// image's /etc/passwd is not read yet), names sorted bytewise.
func lsForeign(w io.Writer, fim *foreign.Image, paths []string, o *lsOpts) error {
	type ent struct {
		name, path string
		st         *foreign.Stat
	}
	var files, dirs []ent
	for _, p := range paths {
		look := fim.Stat
		if o.long || o.dir || o.classify {
			look = fim.Lstat
		}
		st, err := look(p)
		if err != nil {
			return plainErr(err)
		}
		if st.IsDir() && !o.dir {
			dirs = append(dirs, ent{p, p, st})
		} else {
			files = append(files, ent{p, p, st})
		}
	}
	var js []statJSON
	blank := false
	print := func(ents []ent) {
		if o.json {
			for _, e := range ents {
				js = append(js, foreignStat(e.st, e.path, e.name))
			}
			return
		}
		rows := make([][]string, len(ents))
		widths := []int{}
		for i, e := range ents {
			name := e.name
			if o.quote {
				name = shellQuote(name)
			}
			name += foreignIndicator(o, e.st)
			var r []string
			if o.inode {
				r = append(r, fmt.Sprint(e.st.Ino))
			}
			if o.long {
				if e.st.IsSymlink() {
					t := e.st.Target
					if o.quote {
						t = shellQuote(t)
					}
					name += " -> " + t
				}
				size := sizeString(uint64(e.st.Size), o.human)
				if t := e.st.Mode & syscall.S_IFMT; t == syscall.S_IFCHR || t == syscall.S_IFBLK {
					size = fmt.Sprintf("%d, %d", e.st.Rdev>>8&0xfff, e.st.Rdev&0xff|e.st.Rdev>>12&0xfff00)
				}
				r = append(r, modeString(e.st.Mode), fmt.Sprint(e.st.Nlink), fmt.Sprint(e.st.UID), fmt.Sprint(e.st.GID), size, lsTime(e.st.Mtime))
			}
			rows[i] = append(r, name)
			for c, s := range rows[i] {
				for len(widths) <= c {
					widths = append(widths, 0)
				}
				widths[c] = max(widths[c], len(s))
			}
		}
		for _, r := range rows {
			var b strings.Builder
			for c, s := range r {
				switch {
				case c == len(r)-1:
					b.WriteString(s)
				case o.long && (c == len(r)-7 || c == len(r)-2):
					fmt.Fprintf(&b, "%-*s ", widths[c], s) // mode, date
				default:
					fmt.Fprintf(&b, "%*s ", widths[c], s)
				}
			}
			fmt.Fprintln(w, b.String())
		}
	}
	if len(files) > 0 {
		print(files)
		blank = true
	}
	header := len(paths) > 1 || o.rec
	var list func(d ent, depth int) error
	list = func(d ent, depth int) error {
		if depth > 1024 {
			return fmt.Errorf("%s: %w: directories nested over 1024 deep", fim.Name()+":"+d.path, foreign.ErrCorrupt)
		}
		kids, err := fim.ReadDir(d.path)
		if err != nil {
			return plainErr(err)
		}
		var ents []ent
		for _, k := range kids {
			if o.all || o.almost || !strings.HasPrefix(k.Name, ".") {
				ents = append(ents, ent{k.Name, path.Join(d.path, k.Name), k})
			}
		}
		if !o.json {
			if blank {
				fmt.Fprintln(w)
			}
			if header {
				fmt.Fprintf(w, "%s:%s:\n", fim.Name(), d.path)
			}
			if o.long {
				var blocks int64
				for _, e := range ents {
					blocks += (e.st.Size + 1023) / 1024
				}
				fmt.Fprintf(w, "total %d\n", blocks)
			}
		}
		blank = true
		print(ents)
		if o.rec {
			for _, e := range ents {
				if e.st.IsDir() {
					if err := list(e, depth+1); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	for _, d := range dirs {
		if err := list(d, 0); err != nil {
			return err
		}
	}
	if o.json {
		if js == nil {
			js = []statJSON{}
		}
		return cli.JSON(w, js)
	}
	return nil
}

func foreignIndicator(o *lsOpts, st *foreign.Stat) string {
	if !o.classify {
		return ""
	}
	return modeIndicator(st.Mode, o.long)
}

// lsTime is ls -l's date column.
func lsTime(t time.Time) string {
	if time.Since(t) > 180*24*time.Hour || time.Until(t) > time.Hour {
		return t.Local().Format("Jan _2  2006")
	}
	return t.Local().Format("Jan _2 15:04")
}

// infoJSON is ddfs info --json of a foreign image.
type infoJSON struct {
	Type       string          `json:"type"`
	Label      jstr            `json:"label"`
	UUID       string          `json:"uuid"`
	Size       int64           `json:"size"`
	Partitions []partitionJSON `json:"partitions,omitempty"`
}

type partitionJSON struct {
	Index      int    `json:"index"`
	Start      int64  `json:"start"`
	Size       int64  `json:"size"`
	Type       string `json:"type"`
	Name       jstr   `json:"name"`
	Filesystem string `json:"filesystem"`
}

// infoForeign is ddfs info on a foreign image.
func infoForeign(w io.Writer, fim *foreign.Image, asJSON bool) error {
	inf, err := fim.Info()
	if err != nil {
		return plainErr(err)
	}
	if asJSON {
		j := infoJSON{Type: string(inf.Kind), Label: jstr(inf.Label), UUID: inf.UUID, Size: inf.Size}
		for _, p := range inf.Partitions {
			j.Partitions = append(j.Partitions, partitionJSON{p.Index, p.Start, p.Size, p.Type, jstr(p.Name), string(p.Kind)})
		}
		return cli.JSON(w, j)
	}
	label, uuid := inf.Label, inf.UUID
	if label == "" {
		label = "(none)"
	}
	if uuid == "" {
		uuid = "(none)"
	}
	fmt.Fprintf(w, "type:         %s (foreign image, read-only)\nlabel:        %s\nuuid:         %s\nsize:         %s\n", inf.Kind, label, uuid, units.Human(uint64(inf.Size)))
	if !inf.Kind.IsFilesystem() {
		fmt.Fprintf(w, "\npartitions:\n")
		for _, p := range inf.Partitions {
			fs := string(p.Kind)
			if fs == "" {
				fs = "(unknown)"
			}
			fmt.Fprintf(w, "  %d  start %d  size %s  type %s  %s", p.Index, p.Start, units.Human(uint64(p.Size)), p.Type, fs)
			if p.Name != "" {
				fmt.Fprintf(w, "  name %s", p.Name)
			}
			fmt.Fprintf(w, "  (%s@%d)\n", fim.Name(), p.Index)
		}
	}
	return nil
}

// copyOutForeign is ddfs cp from a foreign image to the host: entries
// it cannot copy are named on stderr and the status is 1.
func copyOutForeign(stderr io.Writer, fim *foreign.Image, prog string, srcs []string, dst string, recursive, preserve bool) error {
	bad := 0
	o := foreign.CopyOptions{Recursive: recursive, Preserve: preserve, Skipped: func(err error) {
		bad++
		fmt.Fprintf(stderr, "%s: %s\n", prog, err)
	}}
	for _, s := range srcs {
		if err := fim.CopyOut(s, dst, o); err != nil {
			return plainErr(err)
		}
	}
	if bad > 0 {
		return &cli.CodeError{Code: cli.ExitError}
	}
	return nil
}
