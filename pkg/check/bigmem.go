package check

import (
	"slices"
	"sync"
	"unsafe"
)

// A check keeps a few lists as long as the image has extents and csum
// items, and reads every copy of every node into buffers. Fresh memory
// costs the process a page fault per 4 KiB page on first touch (about
// 30 µs each on a VM, ten times a node's whole check), so these live in
// memory mapped with huge pages (bigmem_linux.go) where the system allows
// it: one fault per 2 MiB. They hold no Go pointers (the collector does
// not see that memory), and freeBig returns them when the check ends.

// bigList is a growable list of T (no pointers) in big memory, on the Go
// heap where that cannot be mapped. A slice of it is valid until the next
// push or free.
type bigList[T any] struct {
	mem  []byte // the mapping, nil on the heap
	list []T
}

func (l *bigList[T]) push(v T) {
	if len(l.list) == cap(l.list) {
		l.grow()
	}
	l.list = append(l.list, v)
}

func (l *bigList[T]) grow() {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if l.mem != nil || len(l.list) == 0 {
		n := max(2*len(l.mem), bigChunk)
		if mem, err := remapBig(l.mem, n); err == nil {
			l.mem = mem
			l.list = unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(mem))), n/size)[:len(l.list)]
			return
		}
		if l.mem != nil { // the old mapping stays: copy it to the heap
			l.list = slices.Clone(l.list)
			freeBig(l.mem)
			l.mem = nil
		}
	}
	l.list = slices.Grow(l.list, max(len(l.list), 64)) // doubling, as the mapping
}

// free returns the mapping; the list is empty after.
func (l *bigList[T]) free() {
	freeBig(l.mem)
	l.mem, l.list = nil, nil
}

// bufArena hands out node buffers carved from big memory. They are never
// given back one by one (the node reads that own them are recycled: see
// readPool), only all together by free.
type bufArena struct {
	mu    sync.Mutex
	maps  [][]byte
	spare []byte // the rest of the last mapping
}

func (a *bufArena) get(n int) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.spare) < n {
		mem, err := remapBig(nil, max(bigChunk, n))
		if err != nil {
			return make([]byte, n)
		}
		a.maps = append(a.maps, mem)
		a.spare = mem
	}
	b := a.spare[:n:n]
	a.spare = a.spare[n:]
	return b
}

func (a *bufArena) free() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range a.maps {
		freeBig(m)
	}
	a.maps, a.spare = nil, nil
}
