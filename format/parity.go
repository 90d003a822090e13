package format

// Geometry of raid5 and raid6 chunks (FORMAT.md §4.4 "Parity profiles").
// The parity bytes themselves are computed in pkg/parity; this file only
// says which stripe holds what in each row.

const (
	// ParityStripeLen is the strip writers give a parity chunk (raised to
	// the node size, ParityStripeLenFor): small, so that a row (D strips)
	// a transaction leaves part-empty costs little.
	ParityStripeLen = 16 << 10
	// MinParityStripeLen and MaxParityStripeLen bound stripe_len of a
	// parity chunk a reader accepts.
	MinParityStripeLen = 4 << 10
	MaxParityStripeLen = 1 << 20
)

// ParityStripeLenFor is the stripe_len of a new parity chunk: 16 KiB or
// the node size, whichever is larger, so no node crosses a strip.
func ParityStripeLenFor(nodeSize uint32) uint32 { return max(ParityStripeLen, nodeSize) }

// ParityStripe is the stripe index that holds P in row row of a parity
// chunk with n stripes: n−1 in row 0, moving down one stripe a row and
// wrapping, so parity writes spread over every device.
func ParityStripe(n int, row uint64) int { return n - 1 - int(row%uint64(n)) }

// QStripe is the stripe index of Q (raid6) in row row: the one after P.
func QStripe(n int, row uint64) int { return (ParityStripe(n, row) + 1) % n }

// DataStripe is the stripe index that holds data strip i (0 ≤ i < D) of
// row row, in a chunk with n stripes of which parity are parity: the data
// strips follow the parity strips, wrapping.
func DataStripe(n, parity int, row uint64, i int) int {
	return (ParityStripe(n, row) + parity + i) % n
}

// RestripeStripeLen is the stripe_len a chunk gets when it is laid out
// again at profile p (balance, device replace): a parity chunk keeps its
// strip or gets ParityStripeLenFor; a chunk leaving parity gets
// DefaultStripeLen; any other keeps its own.
func RestripeStripeLen(old *ChunkItem, p Profile, nodeSize uint32) uint32 {
	oldPI, _ := old.Profile.Info()
	pi, _ := p.Info()
	switch {
	case pi.Parity > 0 && oldPI.Parity == 0:
		return ParityStripeLenFor(nodeSize)
	case pi.Parity == 0 && oldPI.Parity > 0:
		return DefaultStripeLen
	}
	return old.StripeLen
}

// CheckChunkAgainst applies the rules of a chunk that need the
// superblock: a raid5/raid6 chunk needs IncompatRaid56 (a build without
// parity must never have been allowed to open the image) and a strip of
// at least a sector, and of a node for metadata and system chunks.
func CheckChunkAgainst(c *ChunkItem, sb *Superblock) error {
	pi, _ := c.Profile.Info()
	switch {
	case pi.Parity == 0:
		return nil
	case sb.Incompat&IncompatRaid56 == 0:
		return corruptf(nil, "chunk item: %v chunk without incompat raid56", c.Profile)
	case c.StripeLen < sb.SectorSize || (c.Type != ChunkData && c.StripeLen < sb.NodeSize):
		return corruptf(nil, "chunk item: %v %v chunk with stripe_len %d below the sector or node size", c.Type, c.Profile, c.StripeLen)
	}
	return nil
}
