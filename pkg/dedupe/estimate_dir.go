package dedupe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/ddfs/ddfs/pkg/units"
)

// smallRead is the size up to which AddDir's workers take a whole file.
const smallRead = 1 << 20

// AddDir adds every regular file under the host folder root (symlinks are
// not followed). Most files of a tree are small and cost more in system
// calls than in hashing: GOMAXPROCS workers open, read and hash them in
// parallel (raw system calls: an os.File adds five per file), each with
// one buffer of smallRead bytes; bigger files go through Add afterwards.
func (e *Estimator) AddDir(root string) error {
	type result struct {
		path string
		n    int
		outs [][]entry // per row
		big  bool
		err  error
	}
	paths := make(chan string, 256)
	results := make(chan result, 256)
	workers := runtime.GOMAXPROCS(0)
	done := make(chan struct{})
	for range workers {
		go func() {
			buf := make([]byte, smallRead+1)
			for p := range paths {
				n, err := readSmall(p, buf)
				r := result{path: p, n: n, err: err, big: n > smallRead}
				if err == nil && !r.big {
					r.outs = e.wholeEntries(buf[:n])
				}
				results <- r
			}
			done <- struct{}{}
		}()
	}
	var walkErr error
	go func() {
		walkErr = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			paths <- p
			return nil
		})
		close(paths)
		for range workers {
			<-done
		}
		close(results)
	}()
	var big []string
	var first error
	for r := range results {
		switch {
		case first != nil:
		case r.err != nil:
			first = fmt.Errorf("%s: %w", r.path, r.err)
		case r.big:
			big = append(big, r.path)
		default:
			first = e.addWhole(r.outs, r.n)
		}
	}
	if first != nil {
		return first
	}
	if walkErr != nil {
		return walkErr
	}
	for _, p := range big {
		f, err := os.Open(p)
		if err := e.addOpened(p, f, err); err != nil {
			return err
		}
	}
	return nil
}

// readSmall reads up to len(buf) bytes of the file at p.
func readSmall(p string, buf []byte) (int, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// wholeEntries hashes a whole file for every row. Pure: workers call it.
func (e *Estimator) wholeEntries(p []byte) [][]entry {
	outs := make([][]entry, len(e.rows))
	for i, r := range e.rows {
		if r.cdc {
			outs[i], _ = e.cdcEntries(p, r.block, true)
		} else {
			outs[i] = e.hashFixed(p, r.block)
		}
	}
	return outs
}

// addWhole counts a whole file hashed by wholeEntries.
func (e *Estimator) addWhole(outs [][]entry, n int) error {
	e.files++
	e.logical = units.SatAdd(e.logical, uint64(n))
	if e.o.Progress != nil {
		e.o.Progress(int64(n))
	}
	for i, r := range e.rows {
		for _, en := range outs[i] {
			if err := r.t.add(en); err != nil {
				return err
			}
		}
	}
	return nil
}
