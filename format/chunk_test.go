package format

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// stripes returns one stripe per devid, each at 1 MiB * devid.
func stripes(devids ...uint64) []Stripe {
	s := make([]Stripe, len(devids))
	for i, d := range devids {
		s[i] = Stripe{DevID: d, Offset: d << 20, DevUUID: [16]byte{byte(d), 0xaa}}
	}
	return s
}

func chunk(p Profile, length uint64, devids ...uint64) *ChunkItem {
	pi, _ := p.Info()
	sub := uint16(pi.SubStripes)
	if sub == 0 {
		sub = 1
	}
	return &ChunkItem{Length: length, Type: ChunkData, Profile: p, StripeLen: DefaultStripeLen, SubStripes: sub, Stripes: stripes(devids...)}
}

const mib = 1 << 20

func parityChunk(p Profile, length uint64, devids ...uint64) *ChunkItem {
	c := chunk(p, length, devids...)
	c.StripeLen = ParityStripeLen
	return c
}

func TestChunkValidate(t *testing.T) {
	dup := chunk(ProfileDup, 8*mib, 1, 1)
	dup.Stripes[1].Offset = 100 * mib
	cases := []struct {
		name string
		c    *ChunkItem
		want error // nil = valid; else a sentinel besides ErrCorrupt (ErrCorrupt itself = just corrupt)
	}{
		{"single", chunk(ProfileSingle, 8*mib, 1), nil},
		{"dup on one device", dup, nil},
		{"raid0 two devices", chunk(ProfileRaid0, 8*mib, 1, 2), nil},
		{"raid0 three devices", chunk(ProfileRaid0, 3*DefaultStripeLen*10, 1, 2, 3), nil},
		{"raid1", chunk(ProfileRaid1, 8*mib, 1, 2), nil},
		{"raid1c3", chunk(ProfileRaid1C3, 8*mib, 1, 2, 3), nil},
		{"raid10 four devices", chunk(ProfileRaid10, 8*mib, 1, 2, 3, 4), nil},
		{"raid10 six devices", chunk(ProfileRaid10, 3*DefaultStripeLen*7, 1, 2, 3, 4, 5, 6), nil},
		{"metadata type", func() *ChunkItem { c := chunk(ProfileSingle, mib, 1); c.Type = ChunkMetadata; return c }(), nil},
		{"system type", func() *ChunkItem { c := chunk(ProfileSingle, mib, 1); c.Type = ChunkSystem; return c }(), nil},

		{"type 0", func() *ChunkItem { c := chunk(ProfileSingle, mib, 1); c.Type = 0; return c }(), ErrCorrupt},
		{"mixed type", func() *ChunkItem { c := chunk(ProfileSingle, mib, 1); c.Type = ChunkData | ChunkMetadata; return c }(), ErrCorrupt},
		{"raid5 three devices", parityChunk(ProfileRaid5, 8*mib, 1, 2, 3), nil},
		{"raid5 two devices", parityChunk(ProfileRaid5, 8*mib, 1, 2), nil},
		{"raid6 three devices", parityChunk(ProfileRaid6, 8*mib, 1, 2, 3), nil},
		{"raid5 length a partial row", parityChunk(ProfileRaid5, 5*ParityStripeLen, 1, 2, 3), nil},
		{"raid5 one stripe", parityChunk(ProfileRaid5, mib, 1), ErrCorrupt},
		{"raid6 two stripes", parityChunk(ProfileRaid6, mib, 1, 2), ErrCorrupt},
		{"raid6 two stripes on one device", parityChunk(ProfileRaid6, mib, 1, 2, 2), ErrCorrupt},
		{"raid5 length not whole strips", parityChunk(ProfileRaid5, mib+4096, 1, 2, 3), ErrCorrupt},
		{"raid5 strip 2 KiB", func() *ChunkItem { c := parityChunk(ProfileRaid5, mib, 1, 2); c.StripeLen = 2048; return c }(), ErrCorrupt},
		{"raid5 strip 2 MiB", func() *ChunkItem { c := parityChunk(ProfileRaid5, 4*mib, 1, 2); c.StripeLen = 2 * mib; return c }(), ErrCorrupt},
		{"unknown profile", func() *ChunkItem { c := chunk(ProfileSingle, mib, 1); c.Profile = 99; return c }(), ErrUnsupported},
		{"length 0", chunk(ProfileSingle, 0, 1), ErrCorrupt},
		{"stripe_len 0", func() *ChunkItem { c := chunk(ProfileSingle, mib, 1); c.StripeLen = 0; return c }(), ErrCorrupt},
		{"stripe_len not a power of two", func() *ChunkItem { c := chunk(ProfileRaid0, 3*mib, 1, 2); c.StripeLen = 3 << 10; return c }(), ErrCorrupt},
		{"single with sub_stripes 2", func() *ChunkItem { c := chunk(ProfileSingle, mib, 1); c.SubStripes = 2; return c }(), ErrCorrupt},
		{"single with sub_stripes 0", func() *ChunkItem { c := chunk(ProfileSingle, mib, 1); c.SubStripes = 0; return c }(), ErrCorrupt},
		{"raid10 with sub_stripes 1", func() *ChunkItem { c := chunk(ProfileRaid10, 8*mib, 1, 2, 3, 4); c.SubStripes = 1; return c }(), ErrCorrupt},
		{"single with two stripes", chunk(ProfileSingle, mib, 1, 2), ErrCorrupt},
		{"dup with one stripe", chunk(ProfileDup, mib, 1), ErrCorrupt},
		{"dup with three stripes", chunk(ProfileDup, mib, 1, 1, 1), ErrCorrupt},
		{"dup on two devices", chunk(ProfileDup, mib, 1, 2), ErrCorrupt},
		{"raid1 two stripes on one device", chunk(ProfileRaid1, mib, 1, 1), ErrCorrupt},
		{"raid1 one stripe", chunk(ProfileRaid1, mib, 1), ErrCorrupt},
		{"raid1 three stripes", chunk(ProfileRaid1, mib, 1, 2, 3), ErrCorrupt},
		{"raid1c3 two stripes", chunk(ProfileRaid1C3, mib, 1, 2), ErrCorrupt},
		{"raid1c3 two on one device", chunk(ProfileRaid1C3, mib, 1, 2, 2), ErrCorrupt},
		{"raid0 one stripe", chunk(ProfileRaid0, mib, 1), ErrCorrupt},
		{"raid0 two stripes on one device", chunk(ProfileRaid0, mib, 1, 1), ErrCorrupt},
		{"raid0 length not whole rows", chunk(ProfileRaid0, 3*DefaultStripeLen, 1, 2), ErrCorrupt},
		{"raid10 with 3 stripes", chunk(ProfileRaid10, 3*mib, 1, 2, 3), ErrCorrupt},
		{"raid10 with 5 stripes", chunk(ProfileRaid10, 5*mib, 1, 2, 3, 4, 5), ErrCorrupt},
		{"raid10 with 2 stripes", chunk(ProfileRaid10, mib, 1, 2), ErrCorrupt},
		{"raid10 mirrors on one device", chunk(ProfileRaid10, 8*mib, 1, 1, 3, 4), ErrCorrupt},
		{"raid10 length not whole rows", chunk(ProfileRaid10, 3*DefaultStripeLen, 1, 2, 3, 4), ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("valid chunk rejected: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrCorrupt) || !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want ErrCorrupt and %v", err, tc.want)
			}
			// The decoder applies the same rules.
			if len(tc.c.Stripes) > 0 {
				if _, _, err := UnmarshalChunkItem(MarshalChunkItem(tc.c)); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("decoder accepted it: %v", err)
				}
			}
		})
	}
}

func TestChunkRoundTrip(t *testing.T) {
	dup := chunk(ProfileDup, 8*mib, 1, 1)
	dup.Stripes[1].Offset = 100 * mib
	for _, c := range []*ChunkItem{
		chunk(ProfileSingle, 8*mib, 1), dup, chunk(ProfileRaid0, 8*mib, 1, 2), chunk(ProfileRaid1, 8*mib, 2, 1),
		chunk(ProfileRaid1C3, 8*mib, 1, 2, 3), chunk(ProfileRaid10, 8*mib, 1, 2, 3, 4),
	} {
		b := MarshalChunkItem(c)
		if len(b) != c.Size() || len(b) != chunkHeaderSize+stripeSize*len(c.Stripes) {
			t.Fatalf("%v: %d bytes", c, len(b))
		}
		// Trailing bytes (the next sys array entry) are not consumed.
		got, n, err := UnmarshalChunkItem(append(b, 1, 2, 3))
		if err != nil || n != len(b) || !reflect.DeepEqual(got, c) {
			t.Fatalf("%v: got %v n %d err %v", c, got, n, err)
		}
	}
}

func TestChunkDecodeErrors(t *testing.T) {
	b := MarshalChunkItem(chunk(ProfileRaid1, mib, 1, 2))
	if _, _, err := UnmarshalChunkItem(b[:chunkHeaderSize-1]); !errors.Is(err, ErrShort) {
		t.Errorf("short header: %v", err)
	}
	if _, _, err := UnmarshalChunkItem(b[:len(b)-1]); !errors.Is(err, ErrShort) {
		t.Errorf("short stripes: %v", err)
	}
	for _, ns := range []uint16{0, MaxStripes + 1, 0xffff} {
		c := append([]byte(nil), b...)
		binary.LittleEndian.PutUint16(c[16:], ns)
		if _, _, err := UnmarshalChunkItem(c); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%d stripes: %v", ns, err)
		}
	}
}

func TestChunkStripeLength(t *testing.T) {
	cases := []struct {
		c    *ChunkItem
		want uint64
	}{
		{chunk(ProfileSingle, 8*mib, 1), 8 * mib},
		{chunk(ProfileDup, 8*mib, 1, 1), 8 * mib},
		{chunk(ProfileRaid1, 8*mib, 1, 2), 8 * mib},
		{chunk(ProfileRaid1C3, 8*mib, 1, 2, 3), 8 * mib},
		{chunk(ProfileRaid0, 8*mib, 1, 2), 4 * mib},
		{chunk(ProfileRaid0, 3*mib, 1, 2, 3), mib},
		{chunk(ProfileRaid10, 8*mib, 1, 2, 3, 4), 4 * mib},
		{chunk(ProfileRaid10, 9*mib, 1, 2, 3, 4, 5, 6), 3 * mib},
	}
	for _, tc := range cases {
		if got := tc.c.StripeLength(); got != tc.want {
			t.Errorf("%v: %d, want %d", tc.c, got, tc.want)
		}
	}
}

// mapStripe is the logical→physical rule of FORMAT.md §4.4 for striped
// profiles, written from the spec; the test checks the worked example there.
func mapStripe(c *ChunkItem, o uint64) (stripes []int, physical uint64) {
	pi, _ := c.Profile.Info()
	d := uint64(len(c.Stripes) / pi.SubStripes)
	sl := uint64(c.StripeLen)
	nr := o / sl
	i, row := nr%d, nr/d
	for j := range pi.SubStripes {
		stripes = append(stripes, int(i)*pi.SubStripes+j)
	}
	return stripes, c.Stripes[stripes[0]].Offset + row*sl + o%sl
}

func TestStripeMappingExample(t *testing.T) {
	// FORMAT.md §4.4: raid10 on 4 devices, stripes at 1, 2, 3, 4 MiB;
	// chunk offset 200 KiB -> stripes 2 and 3, physical 3 MiB + 72 KiB.
	c := chunk(ProfileRaid10, 8*mib, 1, 2, 3, 4)
	s, p := mapStripe(c, 200<<10)
	if !reflect.DeepEqual(s, []int{2, 3}) || p != 3*mib+72<<10 {
		t.Errorf("raid10: stripes %v physical %d", s, p)
	}
	// raid0 on 3 devices: offset 200 KiB -> stripe_nr 3 -> stripe 0, row 1.
	c = chunk(ProfileRaid0, 3*mib, 1, 2, 3)
	s, p = mapStripe(c, 200<<10)
	if !reflect.DeepEqual(s, []int{0}) || p != mib+72<<10 {
		t.Errorf("raid0: stripes %v physical %d", s, p)
	}
}
