// Command fragment makes free space with many small fragments, for the
// offline trim benchmark (bench/discard.sh):
//
//	fragment ddfs IMG N    two files in the image get alternating 4 KiB
//	                       extents (keep, drop, keep, ...), then drop is
//	                       removed: N free fragments of 4 KiB
//	fragment punch FILE N  FILE (on a mounted peer filesystem) is written
//	                       with N×8 KiB, then every second 4 KiB block is
//	                       punched out: N free fragments in that filesystem
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: fragment ddfs IMG N | fragment punch FILE N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[3])
	if err == nil {
		switch os.Args[1] {
		case "ddfs":
			err = inDDFS(os.Args[2], n)
		case "punch":
			err = punch(os.Args[2], n)
		default:
			err = fmt.Errorf("unknown mode %q", os.Args[1])
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fragment:", err)
		os.Exit(1)
	}
}

const block = 4096

func fill(b []byte, i int) {
	for j := range b {
		b[j] = byte(i>>(j%3*8)) | 1 // never all zero: zero blocks become holes
	}
}

func inDDFS(img string, n int) error {
	st, err := store.Open([]string{img}, volume.Options{Write: true})
	if err != nil {
		return err
	}
	f, err := fsys.New(st, fsys.Options{})
	if err != nil {
		return err
	}
	var files [2]*fsys.Inode
	for i, name := range []string{"/keep", "/drop"} {
		if files[i], err = f.Create(name, fsys.Attr{Mode: syscall.S_IFREG | 0o644}); err != nil {
			return err
		}
	}
	b := make([]byte, block)
	for i := range 2 * n {
		fill(b, i)
		if err := f.WriteAt(files[i%2], b, uint64(i/2)*block); err != nil {
			return err
		}
		if i%100000 == 99999 {
			if err := f.Sync(); err != nil {
				return err
			}
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Remove("/drop"); err != nil {
		return err
	}
	return f.Close()
}

func punch(path string, n int) error {
	fh, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer fh.Close()
	b := make([]byte, 1<<20)
	fill(b, 7)
	for off := int64(0); off < int64(n)*2*block; off += int64(len(b)) {
		if _, err := fh.WriteAt(b[:min(int64(len(b)), int64(n)*2*block-off)], off); err != nil {
			return err
		}
	}
	if err := fh.Sync(); err != nil {
		return err
	}
	for i := range n {
		if err := unix.Fallocate(int(fh.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(2*i+1)*block, block); err != nil {
			return fmt.Errorf("punch block %d: %w", 2*i+1, err)
		}
	}
	return fh.Sync()
}
