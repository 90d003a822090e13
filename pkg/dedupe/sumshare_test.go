package dedupe

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// TestRunSumShares: on every csum type a run frees the same and keeps
// every file; with strong sums (sha256, blake3) repeats are shared on
// their stored sums without being read (under the xxh3 dedupe hash too:
// the extent's own sums prove its match), and with ReadAll, or with weak
// sums, nothing is.
func TestRunSumShares(t *testing.T) {
	for _, c := range []format.CsumType{format.CsumCRC32C, format.CsumXXHash64, format.CsumSHA256, format.CsumBLAKE3} {
		for _, readAll := range []bool{false, true} {
			hash := format.CsumBLAKE3
			if readAll || c == format.CsumSHA256 {
				hash = format.CsumXXH3
			}
			d := newImageCsum(t, format.Settings{}, c)
			model := writeSet(t, d)
			before, _ := physicalBytes(t, d)
			f := openImage(t, d, 0)
			res, err := Run(f, RunOptions{Block: testBlock, Hash: hash, ReadAll: readAll})
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			verify(t, d, model)
			after, _ := physicalBytes(t, d)
			if after != wantPhysical(model) || res.FreedBytes != before-after {
				t.Fatalf("%v readAll %v: physical %d -> %d, want %d; %+v", c, readAll, before, after, wantPhysical(model), res)
			}
			unread := (c == format.CsumSHA256 || c == format.CsumBLAKE3) && !readAll
			// The set's 96 blocks from a pool of 24 repeat far more than
			// a quarter of the bytes passed through.
			if unread != (res.SumSharedBytes > res.RewrittenBytes/4) || (!unread && res.SumSharedBytes != 0) {
				t.Fatalf("%v readAll %v: %d of %d bytes shared unread", c, readAll, res.SumSharedBytes, res.RewrittenBytes)
			}
		}
	}
}

// TestRunWeakSumsRead: two blocks that differ in one sector whose crc32c
// sums are equal stay two blocks: with weak sums equal sums say nothing,
// so both are read (a run trusting them gives the second file the first
// one's bytes).
func TestRunWeakSumsRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	a := make([]byte, testBlock)
	for i := range a {
		a[i] = byte(rng.Uint32() | 1)
	}
	b := bytes.Clone(a)
	crcTwin(b[4096:8192])
	if bytes.Equal(a, b) || crc32.Checksum(a[4096:8192], crc32.MakeTable(crc32.Castagnoli)) != crc32.Checksum(b[4096:8192], crc32.MakeTable(crc32.Castagnoli)) {
		t.Fatal("crcTwin made no twin")
	}
	d := newImageCsum(t, format.Settings{}, format.CsumCRC32C)
	f := openAt(t, d, 0, epoch)
	model := map[string][]byte{"/a": a, "/b": b, "/a2": a}
	for _, p := range []string{"/a", "/b", "/a2"} {
		in, err := f.Create(p, fsys.Attr{Mode: 0o644})
		if err == nil {
			err = f.WriteAt(in, model[p], 0)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	res := runVerified(t, d, model)
	if after, _ := physicalBytes(t, d); after != 2*testBlock || res.SumSharedBytes != 0 {
		t.Fatalf("physical %d, want %d; %+v", after, 2*testBlock, res)
	}
}

// crcTwin changes p (a multiple of 4 bytes long) into different bytes of
// the same crc32c: it flips p[0] and solves for the 4 last bytes. CRC is
// affine, so for equal lengths crc(x^d) = crc(x) ^ lin(d) with lin(d) =
// crc(d) ^ crc(zeros); lin of the 32 bits of the last word is invertible.
func crcTwin(p []byte) {
	tab := crc32.MakeTable(crc32.Castagnoli)
	zero := crc32.Checksum(make([]byte, len(p)), tab)
	lin := func(d []byte) uint32 { return crc32.Checksum(d, tab) ^ zero }
	d := make([]byte, len(p))
	d[0] = 0x80
	target := lin(d)
	d[0] = 0
	// cols[i]: lin of bit i of the last word; solve by elimination over
	// GF(2), keeping which bits each row combines.
	var rows [32]struct{ v, bits uint32 }
	for i := range 32 {
		binary.LittleEndian.PutUint32(d[len(d)-4:], 1<<i)
		rows[i].v, rows[i].bits = lin(d), 1<<i
	}
	var pivots [32]int
	for b := range 32 {
		pivots[b] = -1
	}
	for i := range rows {
		for b := 31; b >= 0; b-- {
			if rows[i].v>>b&1 == 0 {
				continue
			}
			if pivots[b] < 0 {
				pivots[b] = i
				break
			}
			rows[i].v ^= rows[pivots[b]].v
			rows[i].bits ^= rows[pivots[b]].bits
		}
	}
	var bits uint32
	for b := 31; b >= 0; b-- {
		if target>>b&1 != 0 {
			target ^= rows[pivots[b]].v
			bits ^= rows[pivots[b]].bits
		}
	}
	p[0] ^= 0x80
	w := binary.LittleEndian.Uint32(p[len(p)-4:]) ^ bits
	binary.LittleEndian.PutUint32(p[len(p)-4:], w)
}

// TestRunAhead: blocks read ahead on the other goroutine end the same as
// blocks read in turn (Serial).
func TestRunAhead(t *testing.T) {
	for _, c := range []format.CsumType{format.CsumCRC32C, format.CsumBLAKE3} {
		var phys [2]uint64
		for i, serial := range []bool{false, true} {
			d := newImageCsum(t, format.Settings{}, c)
			model := writeSet(t, d)
			f := openImage(t, d, 0)
			res, err := Run(f, RunOptions{Block: testBlock, Hash: format.CsumBLAKE3, Serial: serial})
			if err == nil {
				err = f.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
			verify(t, d, model)
			phys[i], _ = physicalBytes(t, d)
			// How much the reader gets to first depends on scheduling.
			if serial && res.AheadBytes != 0 {
				t.Fatalf("%v serial: %d bytes read ahead", c, res.AheadBytes)
			}
		}
		if phys[0] != phys[1] {
			t.Fatalf("%v: physical %d ahead, %d serial", c, phys[0], phys[1])
		}
	}
}
