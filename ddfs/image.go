package main

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/transfer"
)

// operand is one command-line path: a host path, or IMAGE:PATH.
type operand struct {
	image string // "" for a host path
	path  string
}

func (o operand) String() string {
	if o.image == "" {
		return o.path
	}
	return o.image + ":" + o.path
}

// parseOperand splits IMAGE:PATH. Like scp, a "./" prefix always means
// a host path; otherwise the image is the text before the first colon
// whose prefix names an existing file or device (or FILE@N, a partition
// of one): "d.img:/x", and "co:lon.img:/x" when no file "co" exists.
func parseOperand(arg string) operand {
	if strings.HasPrefix(arg, "./") || strings.HasPrefix(arg, "../") {
		return operand{path: arg}
	}
	if spec, p, hasPath, ok := device.SplitRemote(arg); ok {
		if !hasPath {
			return operand{path: arg} // a bare URL: isImageFile
		}
		return operand{image: spec, path: cmp.Or(p, "/")}
	}
	for i := 0; i < len(arg); i++ {
		if arg[i] != ':' || i == 0 || !namesImage(arg[:i]) {
			continue
		}
		return operand{image: arg[:i], path: cmp.Or(arg[i+1:], "/")}
	}
	return operand{path: arg}
}

// namesImage reports whether img is an existing file or device, or
// FILE@N (a partition) or FILE@NAME (a snapshot) of one, in turn.
func namesImage(img string) bool {
	if st, err := os.Stat(img); err == nil {
		return !st.IsDir()
	}
	at := strings.LastIndexByte(img, '@')
	return at > 0 && namesImage(img[:at])
}

// splitSnapshot splits IMAGE@NAME into the image and the snapshot name
// (""). A name that exists as a file is an image whatever it holds, and
// FILE@N whose partition N opens is that partition: a snapshot named
// by digits is reached through a partitioned disk as disk.img@2@NAME.
func splitSnapshot(name string) (img, snap string) {
	if _, err := os.Stat(name); err == nil || device.IsRemote(name) {
		return name, ""
	}
	at := strings.LastIndexByte(name, '@')
	if at <= 0 || at == len(name)-1 || !namesImage(name[:at]) {
		return name, ""
	}
	if strings.Trim(name[at+1:], "0123456789") == "" {
		if d, err := device.Open(name, device.OpenOptions{}); err == nil {
			d.Close()
			return name, ""
		}
	}
	return name[:at], name[at+1:]
}

// image is an opened image with the name the user gave it.
type image struct {
	name  string
	f     *fsys.FS
	stats cli.Stats
	// live is the filesystem f is a snapshot of (nil: f is the live one).
	live *fsys.FS
}

// openImage opens an image, or with IMAGE@NAME its snapshot NAME
// (read-only: a command that writes is refused with EROFS).
func (of *openFlags) openImage(name string, write bool) (*image, error) {
	img, snap := splitSnapshot(name)
	if snap != "" && write {
		return nil, fmt.Errorf("%s: a snapshot: %w", name, syscall.EROFS)
	}
	st, err := of.open(img, write)
	if err != nil {
		return nil, err
	}
	f, err := fsys.New(st, fsys.Options{BatchNodes: cli.BatchNodes(), StrongTails: true, Receiving: of.receiving})
	if err != nil {
		st.Close()
		return nil, err
	}
	im := &image{name: name, f: f, stats: of.stats}
	if snap != "" {
		v, err := f.OpenSnapshot(snap)
		if err != nil {
			f.Close()
			if errors.Is(err, store.ErrNoSnapshot) {
				err = store.ErrNoSnapshot // the name is in the operand
			}
			return nil, cli.NameImage(name, err)
		}
		im.f, im.live = v, f
	}
	openedNames = append(openedNames, name)
	return im, nil
}

// openedNames are the names of the images this command opened: an error
// path starting with one and a colon is named already ("/a.img:/x" from
// a source image), where an image path may hold a colon too ("/a:b").
var openedNames []string

func namedAlready(p string) bool {
	for _, n := range openedNames {
		if strings.HasPrefix(p, n+":") {
			return true
		}
	}
	return false
}

// close commits (for writers) and releases the image; --stats prints the
// I/O the command did.
func (im *image) close() error {
	st := im.f.Store()
	devs, items := st.Vol.Devices(), st.DevItems()
	err := im.f.Sync()
	// Close may still write (async discard runs when the command ends),
	// so the counters are read after it.
	if cerr := im.f.Close(); err == nil {
		err = cerr
	}
	if im.live != nil {
		if cerr := im.live.Close(); err == nil {
			err = cerr
		}
	}
	printStats(im.stats, inspect.DevicesIO(devs, items), st.FallbackChunks(), st.Super().Settings.AllocPolicy.String(), st.HealStats())
	return im.err(err)
}

// err names image paths the way users wrote them: "disk.img:/x".
func (im *image) err(err error) error {
	if oe := (*transfer.OmitDirError)(nil); errors.As(err, &oe) && oe.InImage {
		return &transfer.OmitDirError{Path: im.name + ":" + oe.Path}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Path, "/") && !namedAlready(pe.Path) {
		return &fs.PathError{Op: pe.Op, Path: im.name + ":" + pe.Path, Err: pe.Err}
	}
	return err
}

// abs makes an image path absolute.
func abs(p string) string {
	if strings.HasPrefix(p, "/") {
		return p
	}
	return "/" + p
}

// imageOperands parses operands that must all be in one image.
func imageOperands(args []string) (string, []string, error) {
	var img string
	var paths []string
	for _, a := range args {
		o := parseOperand(a)
		if o.image == "" && isImageFile(a) {
			o = operand{image: a, path: "/"}
		}
		if o.image == "" {
			return "", nil, notImage(a, "(the image file must exist)")
		}
		if img != "" && o.image != img {
			return "", nil, usageErr("all paths must be in one image (%s and %s)", img, o.image)
		}
		img = o.image
		paths = append(paths, abs(o.path))
	}
	return img, paths, nil
}

// notImage is the error for operand a, which names no image: when the
// image it names (before the colon, or all of it) is missing or cannot
// be opened, that error, as ls says of a missing file (ddfs ls no.img:/:
// ENOENT, exit 1); otherwise a usage error (a host path, a directory).
func notImage(a, hint string) error {
	img := missingImage(a)
	if img != "" && !strings.HasPrefix(a, "./") && !strings.HasPrefix(a, "../") {
		if _, err := os.Stat(img); err != nil {
			return err
		}
	}
	return usageErr("%s: not IMAGE:PATH %s", a, hint)
}

// missingImage is the image operand a names when none of its colons
// ends one that exists: the text before the first colon followed by '/'
// or nothing ("co:lon.img" of "co:lon.img:/x"), else before the first.
func missingImage(a string) string {
	for i := 0; i < len(a); i++ {
		if a[i] == ':' && (i+1 == len(a) || a[i+1] == '/') {
			return a[:i]
		}
	}
	img, _, _ := strings.Cut(a, ":")
	return img
}

// isImageFile reports whether a bare operand names an existing image
// file or device: "ddfs ls d.img" lists its root, "ddfs ls co:lon.img"
// too (a colon-less prefix of it named none).
func isImageFile(arg string) bool {
	if _, _, hasPath, ok := device.SplitRemote(arg); ok {
		return !hasPath
	}
	st, err := os.Stat(arg)
	return err == nil && !st.IsDir()
}
