package dedupe

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// entry is one block seen by an estimate: its hash (16 bytes of blake3:
// a collision among 2^40 blocks has odds below 2^-48), its length and its
// stored length with compression. 24 bytes; EntryBytes is what --help states.
type entry struct {
	h    [16]byte
	n, c uint32
}

// EntryBytes is the memory one block takes in an estimate.
const EntryBytes = 24

func cmpEntry(a, b entry) int { return cmp.Or(cmpHash(a.h, b.h), cmp.Compare(a.n, b.n)) }

func cmpHash(a, b [16]byte) int {
	return cmp.Or(cmp.Compare(binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(b[:8])),
		cmp.Compare(binary.BigEndian.Uint64(a[8:]), binary.BigEndian.Uint64(b[8:])))
}

// tally counts distinct blocks within a memory bound: entries collect in
// memory; a full buffer is sorted and compacted, and when it is still
// more than half full it is spilled as a sorted run to a temporary file.
// The result merges the runs, so it is exact whatever the bound.
type tally struct {
	buf    []entry
	max    int
	dir    string
	file   *os.File
	runs   []int64 // end offsets of the runs in file
	logged int64
}

func (t *tally) add(e entry) error {
	if len(t.buf) < t.max {
		t.buf = append(t.buf, e)
		return nil
	}
	t.compact()
	if len(t.buf) > t.max/2 {
		if err := t.spill(); err != nil {
			return err
		}
	}
	t.buf = append(t.buf, e)
	return nil
}

// compact sorts the buffer and keeps one entry per distinct block.
func (t *tally) compact() {
	slices.SortFunc(t.buf, cmpEntry)
	t.buf = slices.CompactFunc(t.buf, func(a, b entry) bool { return cmpEntry(a, b) == 0 })
}

func (t *tally) spill() error {
	if t.file == nil {
		f, err := os.CreateTemp(t.dir, "dedupe-estimate-*")
		if err != nil {
			return fmt.Errorf("estimate spill file: %w", err)
		}
		os.Remove(f.Name()) // gone when closed, whatever happens
		t.file = f
	}
	w := bufio.NewWriterSize(t.file, 1<<20)
	var b [EntryBytes]byte
	for _, e := range t.buf {
		putEntry(b[:], e)
		if _, err := w.Write(b[:]); err != nil {
			return fmt.Errorf("estimate spill: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("estimate spill: %w", err)
	}
	t.logged += int64(len(t.buf)) * EntryBytes
	t.runs = append(t.runs, t.logged)
	t.buf = t.buf[:0]
	return nil
}

func putEntry(b []byte, e entry) {
	copy(b, e.h[:])
	binary.LittleEndian.PutUint32(b[16:], e.n)
	binary.LittleEndian.PutUint32(b[20:], e.c)
}

func getEntry(b []byte) (e entry) {
	copy(e.h[:], b)
	e.n, e.c = binary.LittleEndian.Uint32(b[16:]), binary.LittleEndian.Uint32(b[20:])
	return e
}

// distinct calls fn once per distinct block, in hash order, and releases
// the tally.
func (t *tally) distinct(fn func(entry)) error {
	t.compact()
	if t.file == nil {
		for _, e := range t.buf {
			fn(e)
		}
		return nil
	}
	defer t.file.Close()
	if err := t.spill(); err != nil {
		return err
	}
	h := &runHeap{}
	start := int64(0)
	for _, end := range t.runs {
		r := &run{r: bufio.NewReaderSize(io.NewSectionReader(t.file, start, end-start), 64<<10)}
		if ok, err := r.next(); err != nil {
			return err
		} else if ok {
			h.rs = append(h.rs, r)
		}
		start = end
	}
	heap.Init(h)
	var last *entry
	for h.Len() > 0 {
		r := h.rs[0]
		if last == nil || cmpEntry(*last, r.cur) != 0 {
			e := r.cur
			fn(e)
			last = &e
		}
		ok, err := r.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return nil
}

type run struct {
	r   *bufio.Reader
	cur entry
}

func (r *run) next() (bool, error) {
	var b [EntryBytes]byte
	if _, err := io.ReadFull(r.r, b[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, fmt.Errorf("estimate spill read: %w", err)
	}
	r.cur = getEntry(b[:])
	return true, nil
}

// runHeap orders runs by their current entry (k-way merge).
type runHeap struct{ rs []*run }

func (h *runHeap) Len() int           { return len(h.rs) }
func (h *runHeap) Less(i, j int) bool { return cmpEntry(h.rs[i].cur, h.rs[j].cur) < 0 }
func (h *runHeap) Swap(i, j int)      { h.rs[i], h.rs[j] = h.rs[j], h.rs[i] }
func (h *runHeap) Push(x any)         { h.rs = append(h.rs, x.(*run)) }
func (h *runHeap) Pop() any {
	r := h.rs[len(h.rs)-1]
	h.rs = h.rs[:len(h.rs)-1]
	return r
}
