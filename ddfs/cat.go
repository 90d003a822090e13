package main

import (
	"io"
	"syscall"
)

func cmdCat(args []string, stdout, _ io.Writer) error {
	fl, of := newCmd("cat", "cat IMAGE:PATH...", "  ddfs cat disk.img:/etc/hostname\n", stdout)
	im, paths, err := openOperands(fl, of, args, false)
	if err != nil {
		return err
	}
	defer im.close()
	buf := make([]byte, 1<<20)
	for _, p := range paths {
		in, err := im.f.Resolve(p, true)
		if err != nil {
			return im.err(err)
		}
		if in.IsDir() {
			return im.err(pathErr("cat", p, syscall.EISDIR))
		}
		for off := uint64(0); off < in.Size; {
			n, err := im.f.ReadAt(in, buf, off)
			if n > 0 {
				if _, werr := stdout.Write(buf[:n]); werr != nil {
					return werr
				}
				off += uint64(n)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return im.err(err)
			}
		}
	}
	return nil
}
