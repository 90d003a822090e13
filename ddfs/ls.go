package main

import (
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/attrspec"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/units"
)

const lsUse = `ls [-laAdRhint1CSrF] [--json] IMAGE:PATH...

As GNU ls: names sorted bytewise (LC_ALL=C), one per line when piped, down
columns on a terminal or with -C (laid out as GNU ls -C); -l shows owner and
group names from the image's own /etc/passwd and /etc/group (-n: numbers).
On a terminal names are quoted so no byte of a name reaches it raw
(--quoting-style=shell-escape); piped, they are printed as they are (literal).`

func newLsCmd() *cobra.Command {
	c, fl, of := newCmd(lsUse, "list directory contents", "  ddfs ls disk.img:/\n  ddfs ls -lhR disk.img:/etc\n  ddfs ls -lt disk.img:/var/log\n  ddfs ls --json disk.img:/etc | jq '.[].name'\n  ddfs ls -l rootfs.ext4:/etc          # a foreign image (ext4, squashfs, ISO 9660, FAT), read-only\n  ddfs ls -R whole.img@2:/             # partition 2 of a disk image\n")
	cli.NoHelpShorthand(c)
	o := &lsOpts{}
	fl.BoolVarP(&o.long, "long", "l", false, "long listing")
	fl.BoolVarP(&o.all, "all", "a", false, "show entries starting with ., and . and ..")
	fl.BoolVarP(&o.almost, "almost-all", "A", false, "show entries starting with ., but not . and ..")
	fl.BoolVarP(&o.dir, "directory", "d", false, "list directories themselves, not their contents")
	fl.BoolVarP(&o.rec, "recursive", "R", false, "list subdirectories recursively")
	fl.BoolVarP(&o.human, "human-readable", "h", false, "sizes as 1.1K, 23M (with -l)")
	fl.BoolVarP(&o.inode, "inode", "i", false, "print each entry's inode number")
	fl.BoolVarP(&o.numeric, "numeric-uid-gid", "n", false, "like -l, with numeric owner and group")
	fl.BoolVarP(&o.one, "one", "1", false, "one entry per line (the default when not a terminal)")
	fl.BoolVarP(&o.cols, "C", "C", false, "list entries down columns (the default on a terminal; width: the terminal's, else $COLUMNS)")
	fl.IntVarP(&o.width, "width", "w", -1, "line width for columns (as GNU ls -w; 0: no limit)")
	fl.BoolVarP(&o.byTime, "time", "t", false, "sort by modification time, newest first")
	fl.BoolVarP(&o.bySize, "size-sort", "S", false, "sort by size, largest first")
	fl.BoolVarP(&o.reverse, "reverse", "r", false, "reverse the order of the sort")
	fl.BoolVarP(&o.classify, "classify", "F", false, "append an indicator: / directory, @ symlink, * executable, | fifo, = socket")
	fl.BoolVar(&o.json, "json", false, "print a JSON array of entries (stat --json keys)")
	quoting := fl.String("quoting-style", "", "literal or shell-escape (default: shell-escape on a terminal, else literal)")
	c.RunE = func(c *cobra.Command, args []string) error {
		if fim, paths, err := foreignOperands(args); fim != nil || err != nil {
			if err != nil {
				return err
			}
			defer fim.Close()
			o.long = o.long || o.numeric
			o.quote = *quoting == quoteShell || *quoting == "" && isTerminal(os.Stdout) && c.OutOrStdout() == os.Stdout
			return lsForeign(c.OutOrStdout(), fim, paths, o)
		}
		im, paths, err := openOperands(of, args, false)
		if err != nil {
			return err
		}
		defer im.close()
		if o.numeric {
			o.long = true
		}
		switch *quoting {
		case "":
			o.quote = isTerminal(os.Stdout) && c.OutOrStdout() == os.Stdout
		case quoteShell:
			o.quote = true
		case quoteLiteral:
		default:
			return usageErr("--quoting-style: want literal or shell-escape")
		}
		tty := isTerminal(os.Stdout) && c.OutOrStdout() == os.Stdout
		o.cols = !o.long && !o.json && !o.one && (o.cols || tty)
		l := &lister{lsOpts: o, im: im, w: c.OutOrStdout(), acc: &attrspec.Accounts{}}
		if o.long && !o.numeric && !o.json {
			if l.acc, err = accountsOf(im.f); err != nil {
				return im.err(err)
			}
		}
		if paths, err = expandPaths(im, paths, &l.bad); err != nil {
			return im.err(err)
		}
		l.header = len(paths) > 1 || o.rec
		if err := l.operands(paths); err != nil {
			return im.err(err)
		}
		if o.json {
			if l.js == nil {
				l.js = []statJSON{}
			}
			if err := cli.JSON(l.w, l.js); err != nil {
				return err
			}
		}
		return im.err(l.bad.Done(nil))
	}
	return c
}

type lsOpts struct {
	long, all, almost, dir, rec, human, inode, numeric bool
	byTime, bySize, reverse, classify, json, quote     bool
	one, cols                                          bool // -1, -C (or a terminal)
	width                                              int  // -w: line width for -C; 0 no limit, <0 unset
}

type lister struct {
	*lsOpts
	im     *image
	w      io.Writer
	header bool
	acc    *attrspec.Accounts
	bad    fsys.Refused // entries fsck flags: listed last, as the error
	js     []statJSON
	blank  bool // a listing was printed: the next directory starts with a blank line
	pad    bool // some name of this listing is quoted: the others get a space (GNU)
}

// lsEntry is one line of a listing.
type lsEntry struct {
	name, path string
	in         *fsys.Inode
}

// operands lists files first, then directories, as GNU ls does.
func (l *lister) operands(paths []string) error {
	var files, dirs []lsEntry
	// A symlink operand is followed unless -l, -d or -F show the link
	// itself (GNU ls without -H/-L).
	follow := !l.long && !l.dir && !l.classify
	for _, p := range paths {
		in, err := l.im.f.Resolve(p, follow)
		if err != nil {
			return err
		}
		e := lsEntry{name: p, path: p, in: in}
		if in.IsDir() && !l.dir {
			dirs = append(dirs, e)
		} else {
			files = append(files, e)
		}
	}
	l.sort(files)
	if len(files) > 0 {
		if err := l.print(files); err != nil {
			return err
		}
		l.blank = true
	}
	l.sort(dirs)
	for _, d := range dirs {
		if err := l.list(d); err != nil {
			return err
		}
	}
	return nil
}

func (l *lister) list(d lsEntry) error {
	kids, err := l.im.f.Children(d.in)
	if err := l.bad.Note(d.path, err); err != nil {
		return err
	}
	var ents []lsEntry
	if l.all {
		parent := d.in
		if d.path != "/" {
			if parent, err = l.im.f.Resolve(path.Dir(d.path), true); err != nil {
				return err
			}
		}
		ents = append(ents, lsEntry{".", d.path, d.in}, lsEntry{"..", path.Dir(d.path), parent})
	}
	for _, k := range kids {
		if l.all || l.almost || !strings.HasPrefix(k.Entry.Name, ".") {
			ents = append(ents, lsEntry{k.Entry.Name, path.Join(d.path, k.Entry.Name), k.Inode})
		}
	}
	l.sort(ents)
	if l.blank && !l.json {
		fmt.Fprintln(l.w)
	}
	l.blank = true
	if l.header && !l.json {
		fmt.Fprintf(l.w, "%s:%s:\n", l.im.name, l.name(d.path))
	}
	if l.long && !l.json {
		var blocks uint64
		for _, e := range ents {
			blocks += (e.in.NBytes + 1023) / 1024
		}
		total := strconv.FormatUint(blocks, 10)
		if l.human { // GNU: "total 512K" in -h units, not 1K blocks
			total = units.Short(blocks * 1024)
		}
		fmt.Fprintf(l.w, "total %s\n", total)
	}
	if err := l.print(ents); err != nil {
		return err
	}
	if l.rec {
		for _, e := range ents {
			if e.in.IsDir() && e.name != "." && e.name != ".." {
				if err := l.list(e); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// sort orders entries by name, -t mtime or -S size (ties by name), -r reversed.
func (l *lister) sort(ents []lsEntry) {
	less := func(a, b lsEntry) bool {
		switch {
		case l.byTime && a.in.Mtime != b.in.Mtime:
			if a.in.Mtime.Sec != b.in.Mtime.Sec {
				return a.in.Mtime.Sec > b.in.Mtime.Sec
			}
			return a.in.Mtime.Nsec > b.in.Mtime.Nsec
		case l.bySize && !l.byTime && a.in.Size != b.in.Size:
			return a.in.Size > b.in.Size
		}
		return a.name < b.name
	}
	sort.SliceStable(ents, func(i, j int) bool {
		if l.reverse {
			return less(ents[j], ents[i])
		}
		return less(ents[i], ents[j])
	})
}

// print writes entries, with -l in columns as wide as their widest cell.
func (l *lister) print(ents []lsEntry) error {
	if l.json {
		for _, e := range ents {
			s, err := statOf(l.im.f, e.in, e.path, e.name)
			if err != nil {
				return err
			}
			l.js = append(l.js, s)
		}
		return nil
	}
	// GNU aligns unquoted names with quoted ones in -l and columns.
	l.pad = false
	for _, e := range ents {
		l.pad = l.pad || l.quote && (l.long || l.cols) && shellQuote(e.name) != e.name
	}
	rows := make([][]string, len(ents))
	for i, e := range ents {
		rows[i] = l.cells(e)
	}
	var widths []int
	for _, r := range rows {
		for len(widths) < len(r) {
			widths = append(widths, 0)
		}
		for c, s := range r {
			widths[c] = max(widths[c], len(s))
		}
	}
	if l.cols {
		return l.columns(rows, widths)
	}
	for _, r := range rows {
		l.row(r, widths)
	}
	return nil
}

// columns prints rows ([inode] name) as GNU ls -C: the inode numbers
// right-aligned before each name.
func (l *lister) columns(rows [][]string, widths []int) error {
	cells := make([]string, len(rows))
	for i, r := range rows {
		if len(r) == 2 {
			cells[i] = fmt.Sprintf("%*s %s", widths[0], r[0], r[1])
		} else {
			cells[i] = r[0]
		}
	}
	var b strings.Builder
	tabs := tabSize()
	if l.width == 0 {
		tabs = 0 // GNU ls -w 0 pads with spaces only
	}
	columns(&b, cells, l.lineWidth(), tabs)
	_, err := io.WriteString(l.w, b.String())
	return err
}

// lineWidth is -w's width (0: no limit, as GNU ls: all on one line as far
// as maxColumns allows), else the terminal's or $COLUMNS.
func (l *lister) lineWidth() int {
	switch {
	case l.width == 0:
		return 1 << 30
	case l.width > 0:
		return l.width
	}
	return lineWidth()
}

// cells are one entry's columns: [inode] [mode nlink owner group size date] name.
func (l *lister) cells(e lsEntry) []string {
	var r []string
	if l.inode {
		r = append(r, fmt.Sprint(e.in.Ino))
	}
	name := l.name(e.name)
	if l.pad && name == e.name {
		name = " " + name
	}
	name += l.indicator(e.in)
	if l.long {
		if e.in.IsSymlink() {
			if t, err := l.im.f.Readlink(e.path); err == nil {
				name += " -> " + l.name(t)
			}
		}
		size := sizeString(e.in.Size, l.human)
		if t := e.in.Mode & syscall.S_IFMT; t == syscall.S_IFCHR || t == syscall.S_IFBLK {
			size = fmt.Sprintf("%d, %d", e.in.Rdev>>8&0xfff, e.in.Rdev&0xff|e.in.Rdev>>12&0xfff00)
		}
		r = append(r, modeString(e.in.Mode), fmt.Sprint(e.in.Nlink), l.acc.UserName(e.in.UID), l.acc.GroupName(e.in.GID), size, timeString(e.in))
	}
	return append(r, name)
}

// row prints cells: numbers right-aligned, owner and group left-aligned
// (as GNU ls -l), the name last and unpadded.
func (l *lister) row(r []string, widths []int) {
	left := map[int]bool{}
	if l.long {
		first := 0
		if l.inode {
			first = 1
		}
		left[first] = true   // mode
		left[first+2] = true // owner
		left[first+3] = true // group
		left[first+5] = true // date
	}
	var b strings.Builder
	for c, s := range r {
		switch {
		case c == len(r)-1:
			b.WriteString(s)
		case left[c]:
			fmt.Fprintf(&b, "%-*s ", widths[c], s)
		default:
			fmt.Fprintf(&b, "%*s ", widths[c], s)
		}
	}
	fmt.Fprintln(l.w, b.String())
}

func (l *lister) name(s string) string {
	if l.quote {
		return shellQuote(s)
	}
	return s
}

// indicator is -F's mark (none on a symlink in a long listing, which
// shows its target instead).
func (l *lister) indicator(in *fsys.Inode) string {
	if !l.classify {
		return ""
	}
	return modeIndicator(in.Mode, l.long)
}

// modeIndicator is ls -F's mark of a file of mode m.
func modeIndicator(m uint32, long bool) string {
	switch m & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return "/"
	case syscall.S_IFLNK:
		if long {
			return ""
		}
		return "@"
	case syscall.S_IFIFO:
		return "|"
	case syscall.S_IFSOCK:
		return "="
	case syscall.S_IFREG:
		if m&0o111 != 0 {
			return "*"
		}
	}
	return ""
}
