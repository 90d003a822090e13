package inband

import (
	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/cdc"
)

// BlockHash is the dedupe hash of a block as the index keeps it. A
// variable so tests can make two different blocks collide.
var BlockHash = func(algo format.CsumType, p []byte) [format.CsumSize]byte {
	return format.DedupeHash(format.Checksum(algo, p))
}

// HashSpec says how blocks are hashed.
type HashSpec struct {
	Algo format.CsumType // the dedupe hash
	// Csum and SS, when SS is set, have Hash also sum the sectors of a
	// block of whole sectors while it is in cache: the writer's pass over
	// cold data took 17% of a dedupe copy's CPU.
	Csum format.CsumType
	SS   uint64
}

// Hash returns p's dedupe hash and, when spec asks and p is whole
// sectors, its sector sums (else nil).
func Hash(p []byte, spec HashSpec) (hash [format.CsumSize]byte, sums []byte) {
	hash = BlockHash(spec.Algo, p)
	if spec.SS == 0 || uint64(len(p))%spec.SS != 0 {
		return hash, nil
	}
	return hash, sectorSums(p, spec.Csum, spec.SS)
}

// sectorSums are the sums of p's sectors (p is whole sectors).
func sectorSums(p []byte, csum format.CsumType, ss uint64) []byte {
	cl := csum.Len()
	sums := make([]byte, 0, uint64(len(p))/ss*uint64(cl))
	for s := uint64(0); s < uint64(len(p)); s += ss {
		sum := format.Checksum(csum, p[s:s+ss])
		sums = append(sums, sum[:cl]...)
	}
	return sums
}

// Cut is the length of the block that starts p (at file offset off):
// up to the next multiple of size, or with cdc set where content-defined
// chunking (average size) cuts.
func Cut(p []byte, off, size uint64, cdcOn bool) uint64 {
	if cdcOn {
		return uint64(cdc.Cut(p, cdc.ForAverage(int(size))))
	}
	return min(uint64(len(p)), size-off%size)
}
