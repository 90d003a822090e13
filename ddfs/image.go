package main

import (
	"cmp"
	"errors"
	"io/fs"
	"os"
	"strings"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/inspect"
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
// a host path; otherwise the text before the first colon is an image when
// it names an existing file or device (or FILE@N, a partition of one).
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
	i := strings.IndexByte(arg, ':')
	if i <= 0 {
		return operand{path: arg}
	}
	img := arg[:i]
	check := img
	if at := strings.LastIndexByte(img, '@'); at > 0 {
		if _, err := os.Stat(img); err != nil {
			check = img[:at]
		}
	}
	if st, err := os.Stat(check); err != nil || st.IsDir() {
		return operand{path: arg}
	}
	p := arg[i+1:]
	if p == "" {
		p = "/"
	}
	return operand{image: img, path: p}
}

// image is an opened image with the name the user gave it.
type image struct {
	name  string
	f     *fsys.FS
	stats cli.Stats
}

func (of *openFlags) openImage(name string, write bool) (*image, error) {
	st, err := of.open(name, write)
	if err != nil {
		return nil, err
	}
	f, err := fsys.New(st, fsys.Options{BatchNodes: cli.BatchNodes(), StrongTails: true})
	if err != nil {
		st.Close()
		return nil, err
	}
	return &image{name: name, f: f, stats: of.stats}, nil
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
	printStats(im.stats, inspect.DevicesIO(devs, items), st.FallbackChunks(), st.Super().Settings.AllocPolicy.String(), st.HealStats())
	return im.err(err)
}

// err names image paths the way users wrote them: "disk.img:/x".
func (im *image) err(err error) error {
	if oe := (*transfer.OmitDirError)(nil); errors.As(err, &oe) && oe.InImage {
		return &transfer.OmitDirError{Path: im.name + ":" + oe.Path}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && !strings.Contains(pe.Path, ":") && strings.HasPrefix(pe.Path, "/") {
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
	img, _, _ := strings.Cut(a, ":")
	if img != "" && !strings.HasPrefix(a, "./") && !strings.HasPrefix(a, "../") {
		if _, err := os.Stat(img); err != nil {
			return err
		}
	}
	return usageErr("%s: not IMAGE:PATH %s", a, hint)
}

// isImageFile reports whether a bare operand (no colon) names an existing
// image file or device: "ddfs ls d.img" lists its root.
func isImageFile(arg string) bool {
	if _, _, hasPath, ok := device.SplitRemote(arg); ok {
		return !hasPath
	}
	if strings.ContainsRune(arg, ':') {
		return false
	}
	st, err := os.Stat(arg)
	return err == nil && !st.IsDir()
}
