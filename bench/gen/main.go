// Command gen makes the benchmark's synthetic data sets, deterministically
// from a seed (the same seed gives the same bytes, names and sizes):
//
//	gen big   [-seed N] [-n 4] [-size 256M] DIR      n files of seeded random bytes
//	gen small [-seed N] [-dirs 100] [-files 1000] [-max 4096] [-nest 0] DIR
//	                                                  dirs x files files of 0..max bytes
//	                                                  (-nest N: the dirs in groups of N,
//	                                                  one level deeper; DIR - writes
//	                                                  the set as a tar to stdout)
//	gen mixed [-seed N] [-size 8G] [-run 64M] FILE    one file: runs of random bytes
//	                                                  and of written zeros, alternating
//
// Every byte is written (no holes) and the output is fsynced, so that the
// timed runs that read it start from a quiet disk. Times of every file are
// set to a fixed instant so the trees are the same from run to run.
package main

import (
	"archive/tar"
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// fixed is the mtime/atime of everything generated.
var fixed = time.Unix(1764460800, 0) // 2025-11-30 00:00 UTC

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "big":
		err = cmdBig(os.Args[2:])
	case "small":
		err = cmdSmall(os.Args[2:])
	case "mixed":
		err = cmdMixed(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: gen big|small|mixed [flags] DEST (see the package comment)")
	os.Exit(2)
}

// size parses 4096, 64K, 256M, 8G.
type size uint64

func (s *size) String() string { return strconv.FormatUint(uint64(*s), 10) }
func (s *size) Set(v string) error {
	mult := uint64(1)
	switch {
	case strings.HasSuffix(v, "K"):
		mult = 1 << 10
	case strings.HasSuffix(v, "M"):
		mult = 1 << 20
	case strings.HasSuffix(v, "G"):
		mult = 1 << 30
	}
	if mult != 1 {
		v = v[:len(v)-1]
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return err
	}
	*s = size(n * mult)
	return nil
}

func newRand(seed uint64) *rand.ChaCha8 {
	var k [32]byte
	binary.LittleEndian.PutUint64(k[:], seed)
	copy(k[8:], "ddfs-bench-gen")
	return rand.NewChaCha8(k)
}

// writeFile writes n bytes from fill into path, fsyncs it and fixes its times.
func writeFile(path string, n uint64, buf []byte, fill func(p []byte, off uint64)) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	for off := uint64(0); off < n; {
		m := min(uint64(len(buf)), n-off)
		fill(buf[:m], off)
		if _, err := f.Write(buf[:m]); err != nil {
			f.Close()
			return err
		}
		off += m
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chtimes(path, fixed, fixed)
}

func cmdBig(args []string) error {
	fl := flag.NewFlagSet("big", flag.ExitOnError)
	seed := fl.Uint64("seed", 1, "seed")
	n := fl.Int("n", 4, "number of files")
	sz := size(256 << 20)
	fl.Var(&sz, "size", "size of each file")
	fl.Parse(args)
	if fl.NArg() != 1 {
		usage()
	}
	dir := fl.Arg(0)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	buf := make([]byte, 4<<20)
	for i := 0; i < *n; i++ {
		r := newRand(*seed*1000 + uint64(i))
		fill := func(p []byte, _ uint64) { r.Read(p) }
		if err := writeFile(filepath.Join(dir, fmt.Sprintf("big%d.bin", i)), uint64(sz), buf, fill); err != nil {
			return err
		}
	}
	return os.Chtimes(dir, fixed, fixed)
}

func cmdSmall(args []string) error {
	fl := flag.NewFlagSet("small", flag.ExitOnError)
	seed := fl.Uint64("seed", 1, "seed")
	dirs := fl.Int("dirs", 100, "directories")
	files := fl.Int("files", 1000, "files per directory")
	maxSize := fl.Int("max", 4096, "largest file size in bytes (sizes are uniform in 0..max)")
	nest := fl.Int("nest", 0, "put the directories in groups of this many (0: all in DIR)")
	fl.Parse(args)
	if fl.NArg() != 1 {
		usage()
	}
	root := fl.Arg(0)
	if root == "-" {
		return smallTar(*seed, *dirs, *files, *maxSize, *nest)
	}
	err := eachSmall(*seed, *dirs, *files, *maxSize, *nest, func(dir string, i int, data []byte) error {
		if i == 0 {
			if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
				return err
			}
		}
		// No per-file fsync (100,000 of them would take minutes): one sync at the end.
		p := filepath.Join(root, dir, fmt.Sprintf("f%04d", i))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		return os.Chtimes(p, fixed, fixed)
	})
	if err != nil {
		return err
	}
	// Folder times last: making their files changed them.
	for d := 0; d < *dirs; d++ {
		dir := smallDir(d, *nest)
		if err := os.Chtimes(filepath.Join(root, dir), fixed, fixed); err != nil {
			return err
		}
		if *nest > 0 {
			if err := os.Chtimes(filepath.Join(root, filepath.Dir(dir)), fixed, fixed); err != nil {
				return err
			}
		}
	}
	if err := os.Chtimes(root, fixed, fixed); err != nil {
		return err
	}
	return syncFS(root)
}

// smallDir is the relative folder of the small set's folder d.
func smallDir(d, nest int) string {
	if nest > 0 {
		return filepath.Join(fmt.Sprintf("g%03d", d/nest), fmt.Sprintf("d%03d", d))
	}
	return fmt.Sprintf("d%03d", d)
}

// eachSmall makes the small set's files in order, calling fn with each
// one's folder, number and bytes (valid until fn returns).
func eachSmall(seed uint64, dirs, files, maxSize, nest int, fn func(dir string, i int, data []byte) error) error {
	r := rand.New(newRand(seed))     // sizes
	content := newRand(seed + 1<<32) // bytes
	buf := make([]byte, maxSize)
	for d := 0; d < dirs; d++ {
		dir := smallDir(d, nest)
		for i := 0; i < files; i++ {
			n := r.IntN(maxSize + 1)
			content.Read(buf[:n])
			if err := fn(dir, i, buf[:n]); err != nil {
				return err
			}
		}
	}
	return nil
}

// smallTar writes the small set as a tar archive to stdout (DEST "-"):
// the same names, bytes and times, and no copy of it on any disk, so a
// build from it measures the builder and not the host's page cache.
func smallTar(seed uint64, dirs, files, maxSize, nest int) error {
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	tw := tar.NewWriter(out)
	hdr := func(name string, typ byte, mode, size int64) error {
		return tw.WriteHeader(&tar.Header{Name: name, Typeflag: typ, Mode: mode, Size: size, ModTime: fixed, AccessTime: fixed, Format: tar.FormatPAX})
	}
	made := map[string]bool{}
	err := eachSmall(seed, dirs, files, maxSize, nest, func(dir string, i int, data []byte) error {
		for _, d := range []string{filepath.Dir(dir), dir} {
			if d != "." && !made[d] {
				made[d] = true
				if err := hdr(d+"/", tar.TypeDir, 0o755, 0); err != nil {
					return err
				}
			}
		}
		if err := hdr(fmt.Sprintf("%s/f%04d", dir, i), tar.TypeReg, 0o644, int64(len(data))); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = out.Flush()
	}
	return err
}

func cmdMixed(args []string) error {
	fl := flag.NewFlagSet("mixed", flag.ExitOnError)
	seed := fl.Uint64("seed", 1, "seed")
	sz := size(8 << 30)
	run := size(64 << 20)
	fl.Var(&sz, "size", "file size")
	fl.Var(&run, "run", "length of each random run and each zero run")
	fl.Parse(args)
	if fl.NArg() != 1 || run == 0 {
		usage()
	}
	r := newRand(*seed)
	fill := func(p []byte, off uint64) {
		// The buffer never straddles a run boundary: run is a multiple of it.
		if (off/uint64(run))%2 == 0 {
			r.Read(p)
		} else {
			clear(p)
		}
	}
	buf := make([]byte, min(4<<20, uint64(run)))
	if uint64(run)%uint64(len(buf)) != 0 {
		return fmt.Errorf("-run must be a multiple of %d", len(buf))
	}
	return writeFile(fl.Arg(0), uint64(sz), buf, fill)
}

// syncFS flushes the filesystem that holds path (syncfs).
func syncFS(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
