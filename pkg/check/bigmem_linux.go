//go:build linux

package check

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// bigChunk is the unit of big memory: one huge page.
const bigChunk = 2 << 20

// remapBig maps n bytes (a multiple of bigChunk) of anonymous memory
// aligned to and backed by huge pages, and copies old (nil: none) into it
// and unmaps old.
func remapBig(old []byte, n int) ([]byte, error) {
	// Over-map by a chunk and trim to an aligned start: a huge page needs
	// an aligned 2 MiB range.
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(n+bigChunk), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	base := uintptr(p)
	start := (base + bigChunk - 1) &^ (bigChunk - 1)
	if head := start - base; head > 0 {
		_ = unix.MunmapPtr(p, head)
	}
	if tail := base + uintptr(n+bigChunk) - (start + uintptr(n)); tail > 0 {
		_ = unix.MunmapPtr(unsafe.Add(p, start-base+uintptr(n)), tail)
	}
	mem := unsafe.Slice((*byte)(unsafe.Add(p, start-base)), n)
	_ = unix.Madvise(mem, unix.MADV_HUGEPAGE) // a hint: without it, small pages
	copy(mem, old)
	freeBig(old)
	return mem, nil
}

func freeBig(mem []byte) {
	if len(mem) > 0 {
		_ = unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(mem)), uintptr(len(mem)))
	}
}
