package transfer

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io/fs"
	"sync"

	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/zeros"
)

// tarVerifyMax is the largest file tar-out reads (and checks) whole
// before writing its header, so a file that does not read is left out
// of the archive; a bigger one is streamed after its header, and a read
// failure leaves zeros in its place (the header promised the bytes).
const tarVerifyMax = pipeBlock

// salvageBlock is the unit of a failed read's second try: the zeros of a
// big file start at its first unreadable block, found the same way
// whatever the pieces read at once (TarOut and the pipe agree).
const salvageBlock = 4096

// skipList collects what tar-out could not archive: each is passed to fn
// (under mu: the walk and the pipe's assembler both report).
type skipList struct {
	mu    sync.Mutex
	fn    func(error)
	n     int
	first error
}

func (s *skipList) add(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if s.first == nil {
		s.first = err
	}
	if s.fn != nil {
		s.fn(err)
	}
}

// refused sorts the error of listing directory dir: an entry the walk
// refuses is returned as skipped (the walk goes on), any other as err.
func refused(dir string, err error) (skipped, stop error) {
	var r fsys.Refused
	if err := r.Note(dir, err); err != nil {
		return nil, err
	}
	return r.Done(nil), nil
}

// done is the walk's result: the first skip without fn, else a count.
func (s *skipList) done() error {
	switch {
	case s.n == 0:
		return nil
	case s.fn == nil:
		return s.first
	}
	return fmt.Errorf("%d not archived: %w", s.n, ErrEntriesSkipped)
}

// skip reports an entry left out or zero-filled, in stream order.
func (t *tarWriter) skip(err error) {
	if t.pipe != nil {
		t.pipe.skip(err)
	} else {
		t.skips.add(err)
	}
}

// regular writes a regular file without holes: header, data, padding.
func (t *tarWriter) regular(h *tar.Header, in *fsys.Inode, src string) error {
	hb, err := t.headerBytes(h)
	if err != nil {
		return err
	}
	if in.Size <= tarVerifyMax {
		if t.pipe != nil && in.Nlink <= 1 {
			t.pipe.verified(hb, in, src) // read first by the assembler
			return nil
		}
		return t.verifiedHere(hb, in, src)
	}
	if _, err := t.w.Write(hb); err != nil {
		return err
	}
	if t.pipe != nil {
		t.pipe.ranges(in, nil, src)
	} else if err := t.salvage(in, []fsys.Range{{Off: 0, Len: in.Size}}, src); err != nil {
		return err
	}
	_, err = t.w.Write(zeros.Block(int(padLen(h.Size))))
	return err
}

// headerBytes is h's header blocks, for the stream to take raw: made by
// appendPAXHeader, or by archive/tar into a buffer of their own.
func (t *tarWriter) headerBytes(h *tar.Header) ([]byte, error) {
	if err := t.tw.Flush(); err != nil { // pads archive/tar's last entry
		return nil, err
	}
	var ok bool
	if t.hbuf, ok = appendPAXHeader(t.hbuf[:0], h); ok {
		return t.hbuf, nil
	}
	var b bytes.Buffer
	if err := tar.NewWriter(&b).WriteHeader(h); err != nil { // writes the header at once
		return nil, err
	}
	return b.Bytes(), nil
}

// verifiedHere reads a small file on the walk, then writes header, data
// and padding; a file that does not read is left out. Hard links in the
// pipe come here: a later link to a file left out must become the file.
func (t *tarWriter) verifiedHere(hb []byte, in *fsys.Inode, src string) error {
	if len(t.buf) < tarVerifyMax {
		t.buf = make([]byte, tarVerifyMax)
	}
	p := t.buf[:in.Size]
	if err := readFull(t.f, in, p, 0); err != nil {
		delete(t.links, in.Ino)
		t.skip(leftOut(src, err))
		return nil
	}
	for _, b := range [][]byte{hb, p, zeros.Block(int(padLen(int64(in.Size))))} {
		if _, err := t.w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func leftOut(src string, err error) error {
	return &fs.PathError{Op: "read", Path: src, Err: fmt.Errorf("not archived: %w", err)}
}

// zeroed names a big file whose data stopped reading at byte off.
func zeroed(src string, off, size uint64, err error) error {
	return &fs.PathError{Op: "read", Path: src,
		Err: fmt.Errorf("unreadable from byte %d of %d, archived with zeros from there: %w", off, size, err)}
}

// salvage writes ranges rs of a big file (its header is out) to the
// stream; from the first block that does not read on, zeros.
func (t *tarWriter) salvage(in *fsys.Inode, rs []fsys.Range, src string) error {
	for i, r := range rs {
		for off, end := r.Off, r.Off+r.Len; off < end; {
			n, err := readSalvage(t.f, in, t.buf[:min(uint64(len(t.buf)), end-off)], off)
			if _, werr := t.w.Write(t.buf[:n]); werr != nil {
				return werr
			}
			off += uint64(n)
			if err != nil {
				t.skip(zeroed(src, off, in.Size, err))
				return t.zeros(end - off + rangeBytes(rs[i+1:]))
			}
		}
	}
	return nil
}

func (t *tarWriter) zeros(n uint64) error {
	for n > 0 {
		k := min(n, uint64(zeros.BlockSize))
		if _, err := t.w.Write(zeros.Block(int(k))); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

func rangeBytes(rs []fsys.Range) uint64 {
	var n uint64
	for _, r := range rs {
		n += r.Len
	}
	return n
}

// readSalvage reads p at off of in; when that fails it reads again block
// by block (salvageBlock, aligned in the file) and returns how many bytes
// before the first block that fails are in p, with that block's error.
func readSalvage(f *fsys.FS, in *fsys.Inode, p []byte, off uint64) (int, error) {
	if readFull(f, in, p, off) == nil {
		return len(p), nil
	}
	for got := 0; got < len(p); {
		k := min(len(p)-got, int(salvageBlock-(off+uint64(got))%salvageBlock))
		if err := readFull(f, in, p[got:got+k], off+uint64(got)); err != nil {
			return got, err
		}
		got += k
	}
	return len(p), nil // read the second time
}
