package format

import (
	"encoding/binary"
	"fmt"
)

// Stripe places one stripe of a chunk on a device (FORMAT.md §4.4).
type Stripe struct {
	DevID   uint64
	Offset  uint64 // physical byte offset on the device
	DevUUID [16]byte
}

// ChunkItem maps Length bytes of logical space starting at the key offset
// onto device stripes (FORMAT.md §4.4 "Chunk item").
//
//	off size field
//	  0    8 length       logical bytes covered
//	  8    2 type         ChunkType
//	 10    2 profile      Profile
//	 12    4 stripe_len   striping unit in bytes (65536)
//	 16    2 num_stripes
//	 18    2 sub_stripes  raid10: 2, others 1
//	 20    4 reserved     zero
//	 24   32 stripe[i]    devid u64, offset u64, dev_uuid [16]
type ChunkItem struct {
	Length     uint64
	Type       ChunkType
	Profile    Profile
	StripeLen  uint32
	SubStripes uint16
	Stripes    []Stripe
}

const (
	chunkHeaderSize = 24
	stripeSize      = 32
	// DefaultStripeLen is the striping unit of raid0/raid10 chunks.
	DefaultStripeLen = 64 << 10
	// MaxStripes bounds num_stripes so a corrupt count cannot allocate wildly.
	MaxStripes = 256
)

// Size is the encoded size of c.
func (c *ChunkItem) Size() int { return chunkHeaderSize + stripeSize*len(c.Stripes) }

// MarshalChunkItem encodes c.
func MarshalChunkItem(c *ChunkItem) []byte {
	b := make([]byte, c.Size())
	binary.LittleEndian.PutUint64(b[0:], c.Length)
	binary.LittleEndian.PutUint16(b[8:], uint16(c.Type))
	binary.LittleEndian.PutUint16(b[10:], uint16(c.Profile))
	binary.LittleEndian.PutUint32(b[12:], c.StripeLen)
	binary.LittleEndian.PutUint16(b[16:], uint16(len(c.Stripes)))
	binary.LittleEndian.PutUint16(b[18:], c.SubStripes)
	for i, s := range c.Stripes {
		o := chunkHeaderSize + i*stripeSize
		binary.LittleEndian.PutUint64(b[o:], s.DevID)
		binary.LittleEndian.PutUint64(b[o+8:], s.Offset)
		copy(b[o+16:o+32], s.DevUUID[:])
	}
	return b
}

// UnmarshalChunkItem decodes and validates a chunk item; n is the number
// of bytes consumed.
func UnmarshalChunkItem(b []byte) (c *ChunkItem, n int, err error) {
	if len(b) < chunkHeaderSize {
		return nil, 0, corruptf(ErrShort, "chunk item: %d bytes", len(b))
	}
	c = &ChunkItem{
		Length:     binary.LittleEndian.Uint64(b[0:]),
		Type:       ChunkType(binary.LittleEndian.Uint16(b[8:])),
		Profile:    Profile(binary.LittleEndian.Uint16(b[10:])),
		StripeLen:  binary.LittleEndian.Uint32(b[12:]),
		SubStripes: binary.LittleEndian.Uint16(b[18:]),
	}
	ns := int(binary.LittleEndian.Uint16(b[16:]))
	if ns == 0 || ns > MaxStripes {
		return nil, 0, corruptf(nil, "chunk item: %d stripes", ns)
	}
	n = chunkHeaderSize + ns*stripeSize
	if len(b) < n {
		return nil, 0, corruptf(ErrShort, "chunk item: %d stripes need %d bytes, have %d", ns, n, len(b))
	}
	c.Stripes = make([]Stripe, ns)
	for i := range c.Stripes {
		o := chunkHeaderSize + i*stripeSize
		c.Stripes[i].DevID = binary.LittleEndian.Uint64(b[o:])
		c.Stripes[i].Offset = binary.LittleEndian.Uint64(b[o+8:])
		copy(c.Stripes[i].DevUUID[:], b[o+16:o+32])
	}
	if err := c.Validate(); err != nil {
		return nil, 0, err
	}
	return c, n, nil
}

// Validate checks the geometry rules of the chunk's profile.
func (c *ChunkItem) Validate() error {
	switch c.Type {
	case ChunkData, ChunkMetadata, ChunkSystem:
	default:
		return corruptf(nil, "chunk item: bad type %d", c.Type)
	}
	pi, ok := c.Profile.Info()
	if !ok || !c.Profile.Supported() {
		return corruptf(ErrUnsupported, "chunk item: profile %v", c.Profile)
	}
	ns := len(c.Stripes)
	if c.Length == 0 || c.StripeLen == 0 || c.StripeLen&(c.StripeLen-1) != 0 {
		return corruptf(nil, "chunk item: length %d stripe_len %d", c.Length, c.StripeLen)
	}
	if int(c.SubStripes) != pi.SubStripes {
		return corruptf(nil, "chunk item: %v with sub_stripes %d", c.Profile, c.SubStripes)
	}
	switch c.Profile {
	case ProfileSingle:
		ok = ns == 1
	case ProfileDup:
		// Two copies on one device that must not overlap.
		ok = ns == 2 && c.Stripes[0].DevID == c.Stripes[1].DevID &&
			max(c.Stripes[0].Offset, c.Stripes[1].Offset)-min(c.Stripes[0].Offset, c.Stripes[1].Offset) >= c.Length
	case ProfileRaid1, ProfileRaid1C3:
		ok = ns == pi.Copies
	case ProfileRaid0:
		ok = ns >= pi.MinDevices
	case ProfileRaid10:
		ok = ns >= pi.MinDevices && ns%2 == 0
	case ProfileRaid5, ProfileRaid6:
		ok = ns >= pi.MinDevices && c.StripeLen >= MinParityStripeLen && c.StripeLen <= MaxParityStripeLen
	}
	if !ok {
		return corruptf(nil, "chunk item: %v with %d stripes", c.Profile, ns)
	}
	if c.Profile != ProfileDup {
		seen := map[uint64]bool{}
		for _, s := range c.Stripes {
			if seen[s.DevID] {
				return corruptf(nil, "chunk item: %v has two stripes on device %d", c.Profile, s.DevID)
			}
			seen[s.DevID] = true
		}
	}
	if pi.Parity > 0 && c.Length%uint64(c.StripeLen) != 0 {
		return corruptf(nil, "chunk item: length %d not a multiple of stripe_len %d", c.Length, c.StripeLen)
	}
	if pi.Striped && pi.Parity == 0 {
		data := uint64(pi.DataStripes(ns))
		if c.Length%(data*uint64(c.StripeLen)) != 0 {
			return corruptf(nil, "chunk item: length %d not a multiple of %d stripes of %d", c.Length, data, c.StripeLen)
		}
	}
	return nil
}

// StripeLength is the number of device bytes each stripe occupies.
func (c *ChunkItem) StripeLength() uint64 {
	pi, _ := c.Profile.Info()
	if !pi.Striped {
		return c.Length
	}
	if d := pi.DataStripes(len(c.Stripes)); d < 1 || c.StripeLen == 0 {
		return c.Length // not a valid chunk (Validate refuses it): no division by zero
	}
	if pi.Parity > 0 { // whole rows; the last may reach past length
		row := uint64(pi.DataStripes(len(c.Stripes))) * uint64(c.StripeLen)
		return (c.Length + row - 1) / row * uint64(c.StripeLen)
	}
	return c.Length / uint64(pi.DataStripes(len(c.Stripes)))
}

func (c *ChunkItem) String() string {
	return fmt.Sprintf("%v/%v len %d stripes %d", c.Type, c.Profile, c.Length, len(c.Stripes))
}
