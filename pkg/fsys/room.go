package fsys

import "github.com/ddfs/ddfs/format"

// roomSlack is kept beyond the estimate: a new chunk's smallest stripe on
// each of two devices, node splits, the commit's own root updates.
const roomSlack = 8 << 20

// CommitIfLow commits the running transaction before an operation that
// writes up to n data bytes, when the space left may not hold them and
// the metadata the transaction has dirtied. An ENOSPC inside the
// operation then costs only it (the caller aborts, the commit keeps what
// came before), not everything since the last commit; with room to spare
// it does nothing, so batches stay large.
func (f *FS) CommitIfLow(n uint64) error {
	if f.tx == nil || f.roomFor(n) {
		return nil
	}
	return f.Sync()
}

// roomFor estimates, conservatively, whether n data bytes fit.
func (f *FS) roomFor(n uint64) bool {
	var free [2]uint64 // data, metadata: logical bytes free in chunks
	copies := [2]uint64{1, 1}
	for _, bg := range f.st.BlockGroups() {
		i := 0
		switch bg.Chunk.Type {
		case format.ChunkData:
		case format.ChunkMetadata:
			i = 1
		default:
			continue
		}
		free[i] += bg.Free()
		if pi, ok := bg.Chunk.Profile.Info(); ok {
			copies[i] = max(copies[i], uint64(pi.Copies))
		}
	}
	allocated := f.st.AllocatedBytes()
	var raw uint64 // unallocated device bytes
	if total := f.st.Super().TotalBytes; total > allocated {
		raw = total - allocated
	}
	ns := uint64(f.st.Super().NodeSize)
	need := [2]uint64{n, uint64(f.tx.DirtyNodes()+64)*ns + n/512} // csum and extent items grow with n
	var rawNeed uint64
	for i := range need {
		if need[i] > free[i] {
			rawNeed += (need[i] - free[i]) * copies[i]
		}
	}
	return rawNeed+roomSlack <= raw
}
