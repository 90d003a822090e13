package main

import (
	"github.com/ddfs/ddfs/pkg/fsys"
)

// setEach runs fn on every IMAGE:PATH operand in one transaction. With
// leading > 0, the first operand is an argument that make builds fn from.
func setEach(of *openFlags, args []string, fn func(*fsys.FS, string) error, leading int,
	make ...func(string) (func(*fsys.FS, string) error, error)) error {
	if len(args) <= leading {
		return usageErr("missing IMAGE:PATH")
	}
	if leading > 0 {
		var err error
		if fn, err = make[0](args[0]); err != nil {
			return err
		}
	}
	img, paths, err := imageOperands(args[leading:])
	if err != nil {
		return err
	}
	im, err := of.openImage(img, true)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := fn(im.f, p); err != nil {
			im.f.Abort()
			im.close()
			return im.err(err)
		}
	}
	return im.close()
}
