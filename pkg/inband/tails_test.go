package inband

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
)

// TestTailOfChecksWhatWasWritten: a tail is only made from bytes whose
// sector sums are those the write computed, and whose xxh3 is the
// entry's.
func TestTailOfChecksWhatWasWritten(t *testing.T) {
	const bs = 128 << 10
	d := device.NewMemDevice("m0", 64<<20)
	st, err := store.Create(store.CreateParams{FSID: [16]byte{4}, Csum: format.CsumCRC32C, NodeSize: 16384, SectorSize: 4096,
		Data: format.ProfileSingle, Metadata: format.ProfileDup, Devices: []store.NewDevice{{Dev: d, Path: d.Name()}}})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := st.Begin()
	if err != nil {
		t.Fatal(err)
	}
	logical, err := tx.AllocData(bs)
	if err != nil {
		t.Fatal(err)
	}
	a := make([]byte, bs)
	rng := rand.New(rand.NewPCG(33, 1))
	for i := range a {
		a[i] = byte(rng.Uint32())
	}
	if err := st.Vol.Write(logical, a); err != nil {
		t.Fatal(err)
	}
	x := New(st, nil, Options{StrongTails: true})
	hash, sums := Hash(a, HashSpec{Algo: format.CsumXXH3, Csum: format.CsumCRC32C, SS: 4096})
	u := untailed{key: format.Key{Offset: logical}, hash: hash, length: bs, sums: sums, diskLen: bs, ram: bs}
	tl, ok := x.tailOf(&u, 4096, format.CsumCRC32C)
	if !ok || tl.strong != format.StrongDedupeHash(a) {
		t.Fatalf("tail of the block as written: %v %x", ok, tl.strong)
	}
	u.sums = bytes.Clone(sums)
	u.sums[5] ^= 1
	if _, ok := x.tailOf(&u, 4096, format.CsumCRC32C); ok {
		t.Fatal("a tail from bytes whose sums differ from the write's")
	}
	u.sums, u.hash[3] = nil, u.hash[3]^1
	if _, ok := x.tailOf(&u, 4096, format.CsumCRC32C); ok {
		t.Fatal("a tail from bytes whose xxh3 differs from the entry's")
	}
	tx.Abort()
}
