package main

// Foreign images into ddfs (issue 41, import): tar-out of a foreign tree,
// and cp of one into a ddfs image, both through one PAX stream that
// pkg/foreign writes and transfer.TarIn reads (streaming, bounded memory;
// what the format keeps: modes, owners, times, symlinks, hard links where
// it numbers inodes, device nodes, fifos).

import (
	"fmt"
	"io"
	"path"
	"syscall"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/foreign"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/transfer"
)

// tarOutForeign writes dir of a foreign image as a tar stream; entries
// it cannot put in the stream are said on stderr and make the exit 1.
func tarOutForeign(stdout, stderr io.Writer, fim *foreign.Image, prog, dir string) error {
	bad := 0
	err := fim.TarOut(stdout, dir, foreign.TarOptions{Skipped: func(err error) {
		bad++
		fmt.Fprintf(stderr, "%s: %s\n", prog, err)
	}})
	if err != nil {
		return plainErr(err)
	}
	if bad > 0 {
		return &cli.CodeError{Code: cli.ExitError}
	}
	return nil
}

// copyForeignIn copies src of a foreign image to image path to, as cp
// names it: into to when it is a directory, else as to. It keeps what
// cp -a keeps (the stream carries it); a directory needs -r.
func copyForeignIn(fim *foreign.Image, src string, f *fsys.FS, to string, o transfer.Options) error {
	st, err := fim.Lstat(src)
	if err != nil {
		return err
	}
	if st.IsDir() && !o.Recursive {
		return fmt.Errorf("%s:%s: -r not specified; omitting directory", fim.Name(), src)
	}
	dir, name := to, path.Base(path.Clean("/"+src))
	if in, err := f.Resolve(to, true); err != nil || !in.IsDir() {
		dir, name = path.Dir(to), path.Base(to)
	}
	if name == "/" { // the image's root into a directory: its contents
		name = ""
	}
	if _, err := f.Resolve(dir, true); err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(fim.TarOut(pw, src, foreign.TarOptions{Prefix: name})) }()
	err = transfer.TarIn(f, pr, dir, o)
	pr.CloseWithError(syscall.ECANCELED) // the writer stops when the reader did
	return err
}

// isForeign reports whether img is a foreign image (one that opens as
// such; an unreadable one is left to the ddfs path's error).
func isForeign(img string) bool {
	fim, _ := openForeign(img)
	if fim != nil {
		fim.Close()
	}
	return fim != nil
}

// copyForeignInto is copyForeignIn of operand s.
func copyForeignInto(s operand, f *fsys.FS, to string, o transfer.Options) error {
	fim, err := openForeign(s.image)
	if err != nil {
		return err
	}
	defer fim.Close()
	return plainErr(copyForeignIn(fim, abs(s.path), f, to, o))
}
