package main

import (
	"bufio"
	"io"
	"os"

	"github.com/ddfs/ddfs/pkg/transfer"
)

func cmdTarIn(args []string, stdout, _ io.Writer) error {
	fl, of := newCmd("tar-in", "tar-in IMAGE[:DIR] < archive.tar", "  ddfs tar-in rootfs.img < alpine-minirootfs.tar\n  zcat x.tar.gz | ddfs tar-in disk.img:/opt\n", stdout)
	if err := parseFlags(fl, args); err != nil {
		return err
	}
	img, dir, err := imageDir(fl.Args())
	if err != nil {
		return err
	}
	im, err := of.openImage(img, true)
	if err != nil {
		return err
	}
	if err := transfer.TarIn(im.f, bufio.NewReaderSize(os.Stdin, 1<<20), dir, transfer.Options{}); err != nil {
		im.f.Abort()
		im.close()
		return im.err(err)
	}
	return im.close()
}

func cmdTarOut(args []string, stdout, _ io.Writer) error {
	fl, of := newCmd("tar-out", "tar-out IMAGE[:DIR] > archive.tar", "  ddfs tar-out disk.img > all.tar\n  ddfs tar-out disk.img:/etc | tar -tvf -\n", stdout)
	if err := parseFlags(fl, args); err != nil {
		return err
	}
	img, dir, err := imageDir(fl.Args())
	if err != nil {
		return err
	}
	im, err := of.openImage(img, false)
	if err != nil {
		return err
	}
	defer im.close()
	w := bufio.NewWriterSize(stdout, 1<<20)
	if err := transfer.TarOut(im.f, w, dir); err != nil {
		return im.err(err)
	}
	return w.Flush()
}

// imageDir takes one IMAGE or IMAGE:DIR operand.
func imageDir(args []string) (string, string, error) {
	if len(args) != 1 {
		return "", "", usageErr("want one IMAGE[:DIR]")
	}
	o := parseOperand(args[0])
	if o.image == "" {
		if st, err := os.Stat(args[0]); err == nil && !st.IsDir() {
			return args[0], "/", nil
		}
		return "", "", usageErr("%s: no such image", args[0])
	}
	return o.image, abs(o.path), nil
}
