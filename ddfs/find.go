package main

import (
	"bufio"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/attrspec"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/fsys"
)

const findLong = `Walks the trees below each IMAGE:PATH (all in one image) and evaluates the
expression on every entry, as GNU find does without -L: symlinks are never
followed, entries are visited in name order, a directory before its contents.
Paths print as given after the colon, the image name left out ("/etc/passwd").
The options of ddfs (--device, --degraded, --wait, --stats, --help) come before
the expression.

Tests:   -name PAT, -iname PAT (the name; *, ?, [...] match a leading '.' too)
         -path PAT, -ipath PAT (the whole path; * and ? match '/' too)
         -type [fdlbcps] (a comma list: -type f,l)
         -size [+-]N[cwbkMG] (size rounded up to units of 512 bytes by default:
                -size -1M matches only empty files, as in GNU find)
         -empty, -newer REF (REF: IMAGE:PATH of the same image, or a host file)
         -newerXY REF (X, Y one of a, c, m: time X later than REF's time Y;
                Y t: REF is a date, as touch -d: -newermt @1700000000)
         -mtime, -atime, -ctime [+-]N (age in days rounded down, as GNU find:
                +1 is more than 2 days, -1 less than 1; N may have a fraction)
         -mmin, -amin, -cmin [+-]N (age in minutes, as GNU find: N is from
                N-1 to N minutes, +N more than N, -N less than N)
         -true, -false
Actions: -print (the default), -print0, -prune,
         -printf FORMAT (%p path, %s size in bytes, %m mode in octal, %u owner
                from the image's /etc/passwd, %T@ mtime in seconds, %%,
                the escapes \n \t \0; anything else is refused)
Options: -maxdepth N, -mindepth N
Operators, by priority: ( EXPR ), ! EXPR or -not EXPR, EXPR [-a|-and] EXPR,
         EXPR -o|-or EXPR`

const findExamples = `  ddfs find disk.img:/etc -name '*.conf'
  ddfs find disk.img:/ -type f -size +1M
  ddfs find disk.img:/ -maxdepth 1 -type d
  ddfs find disk.img:/ -name '*.tmp' -print0 | xargs -0 -n1 echo
  ddfs find disk.img:/ \( -name .git -prune \) -o -type f -empty -print
  ddfs find disk.img:/var/log -type f -mtime +7 -printf '%T@ %s %p\n'
`

func newFindCmd() *cobra.Command {
	c, fl, of := newCmd("find IMAGE:PATH... [EXPRESSION]\n\n"+findLong, "search for entries in an image (GNU find expressions)", findExamples)
	c.Annotations = map[string]string{cli.ExitCodesKey: "0 every path walked, 1 a path missing or unreadable, or an entry fsck flags (reported, the walk goes on), 2 usage error"}
	// find's single-dash long tests (-name, -type) are not pflag options.
	c.DisableFlagParsing = true
	fl.BoolP("help", "h", false, "print this help and exit")
	c.RunE = func(c *cobra.Command, args []string) error {
		n := 0
		for n < len(args) && !isExprToken(args[n]) {
			n++
		}
		if err := fl.Parse(args[:n]); err != nil {
			return cli.Usagef("%v", err)
		}
		if help, _ := fl.GetBool("help"); help {
			return pflag.ErrHelp
		}
		return runFind(c, of, fl.Args(), args[n:])
	}
	return c
}

// isExprToken says where the expression starts: at the first "-x" that is
// not a "--option", "!" or "(".
func isExprToken(a string) bool {
	return a == "!" || a == "(" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && a != "-" && a != "-h"
}

func runFind(c *cobra.Command, of *openFlags, starts, expr []string) error {
	if len(starts) == 0 {
		return usageErr("missing IMAGE:PATH")
	}
	img, paths, err := imageOperands(starts)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(c.OutOrStdout(), 64<<10)
	defer w.Flush()
	fd := &finder{w: w, maxdepth: -1, stderr: c.ErrOrStderr(), prog: cli.Prog(c), now: fsys.TimespecOf(time.Now())}
	if fim, err := openForeign(img); fim != nil || err != nil {
		if err != nil {
			return err
		}
		defer fim.Close()
		fd.tree = foreignFind{fim}
	} else {
		im, err := of.openImage(img, false)
		if err != nil {
			return err
		}
		defer im.close()
		fd.im, fd.tree = im, imageTree{im}
		if paths, err = expandPaths(im, paths, nil); err != nil {
			return im.err(err)
		}
	}
	if fd.expr, err = parseFind(fd, expr); err != nil {
		return err
	}
	for _, p := range paths {
		in, err := fd.tree.resolve(p)
		if err != nil {
			fd.fail(err)
			continue
		}
		fd.walk(p, in, 0)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := fd.bad.Done(nil); err != nil {
		return fd.tree.err(err)
	}
	if fd.failed {
		return &cli.CodeError{Code: cli.ExitError}
	}
	return nil
}

// finder is one find run.
type finder struct {
	im                 *image   // a ddfs image (nil for a foreign one)
	tree               findTree // what is walked
	w                  *bufio.Writer
	expr               pred
	maxdepth, mindepth int // -1: no -maxdepth
	bad                fsys.Refused
	stderr             io.Writer
	prog               string
	failed             bool
	now                format.Timespec    // the start of the run: -mtime and the like count back from it
	acc                *attrspec.Accounts // the image's names, for -printf %u
}

// entry is what the expression is evaluated on.
type entry struct {
	path  string
	in    *fsys.Inode
	prune bool // set by -prune: do not descend
}

type pred func(e *entry) bool

// fail reports an error and goes on, as find does; the exit code is 1.
func (fd *finder) fail(err error) {
	fd.w.Flush()
	cli.Report(fd.stderr, fd.prog, fd.tree.err(err))
	fd.failed = true
}

// walk visits p and, for a directory, its children in name order.
// Children leaves out the entries fsck flags (a loop, a second name of a
// directory), so the walk ends on any image.
func (fd *finder) walk(p string, in *fsys.Inode, depth int) {
	e := &entry{path: p, in: in}
	if depth >= fd.mindepth {
		fd.expr(e)
	}
	if !in.IsDir() || e.prune || fd.maxdepth >= 0 && depth >= fd.maxdepth {
		return
	}
	kids, err := fd.tree.children(p, in)
	if err := fd.bad.Note(p, err); err != nil {
		fd.fail(&fs.PathError{Op: "read", Path: p, Err: err})
		return
	}
	sort.Slice(kids, func(i, j int) bool { return kids[i].Entry.Name < kids[j].Entry.Name })
	for _, k := range kids {
		fd.walk(joinPath(p, k.Entry.Name), k.Inode, depth+1)
	}
}

// joinPath appends a name as find does: "/" + "etc" is "/etc", "/etc/" +
// "passwd" is "/etc/passwd".
func joinPath(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// refTime is time which (a, c or m) of -newer's REF: an image path of
// the same image (IMAGE:PATH) or a host file.
func (fd *finder) refTime(ref string, which byte) (format.Timespec, error) {
	if op := parseOperand(ref); op.image != "" {
		if fd.im == nil || op.image != fd.im.name {
			return format.Timespec{}, usageErr("-newer %s: not in the image searched", ref)
		}
		in, err := fd.im.f.Resolve(abs(op.path), true)
		if err != nil {
			return format.Timespec{}, fd.im.err(err)
		}
		return findTime(in, which), nil
	}
	var st syscall.Stat_t
	if err := syscall.Stat(ref, &st); err != nil {
		return format.Timespec{}, &fs.PathError{Op: "stat", Path: ref, Err: err}
	}
	t := map[byte]syscall.Timespec{'a': st.Atim, 'c': st.Ctim, 'm': st.Mtim}[which]
	return format.Timespec{Sec: t.Sec, Nsec: uint32(t.Nsec)}, nil
}

// isEmpty is -empty: an empty regular file or a directory without entries.
func (fd *finder) isEmpty(e *entry) bool {
	if e.in.IsRegular() {
		return e.in.Size == 0
	}
	if !e.in.IsDir() {
		return false
	}
	empty, err := fd.tree.empty(e.path, e.in)
	if err != nil {
		fd.fail(&fs.PathError{Op: "read", Path: e.path, Err: err})
	}
	return empty
}

// matchPath is -path: fnmatch without FNM_PATHNAME, where '*' and '?'
// match '/' too. path.Match stops at '/', so both sides trade it for a NUL,
// which no name and no argument holds.
func matchPath(pattern, p string) bool {
	ok, _ := path.Match(strings.ReplaceAll(pattern, "/", "\x00"), strings.ReplaceAll(p, "/", "\x00"))
	return ok
}
