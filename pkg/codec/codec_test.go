package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/ddfs/ddfs/format"
)

const sector = 4096

// frame wraps a raw stream in the extent framing, padded to the sector.
func frame(stream []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(stream)))
	b = append(b, stream...)
	return append(b, make([]byte, (sector-len(b)%sector)%sector)...)
}

func text(n int) []byte { return bytes.Repeat([]byte("ddfs compresses this line. "), n/27+1)[:n] }

func TestRoundTrip(t *testing.T) {
	for _, c := range []format.Compression{format.CompressZstd, format.CompressS2} {
		for _, n := range []int{5000, 128 << 10, format.MaxExtentBytes} {
			p := text(n)
			framed, ok, err := Compress(p, c, 3, sector)
			if err != nil || !ok {
				t.Fatalf("%v %d: ok %v err %v", c, n, ok, err)
			}
			got, err := Decompress(frame(framed[frameHeader:]), c, uint64(n))
			if err != nil || !bytes.Equal(got, p) {
				t.Fatalf("%v %d: %v", c, n, err)
			}
		}
	}
}

// TestDecompressHostile: every length in a compressed extent comes from
// the image; each lie is corruption, found before a large allocation.
func TestDecompressHostile(t *testing.T) {
	small := text(10000)
	zs, _ := zstd.NewWriter(nil)
	defer zs.Close()
	zframe := frame(zs.EncodeAll(small, nil))
	sframe := frame(s2.Encode(nil, small))
	// A zstd frame of 16 MiB of zeros: a few hundred bytes on disk.
	bomb := frame(zs.EncodeAll(make([]byte, 2*format.MaxExtentBytes), nil))
	lying := bytes.Clone(sframe)
	binary.LittleEndian.PutUint32(lying, uint32(len(lying))) // claims more than the extent
	cases := []struct {
		name string
		disk []byte
		c    format.Compression
		ram  uint64
	}{
		{"zstd: ram larger than the stream", zframe, format.CompressZstd, uint64(len(small)) + 1},
		{"zstd: ram smaller than the stream", zframe, format.CompressZstd, uint64(len(small)) - 1},
		{"zstd: ram 2^62", zframe, format.CompressZstd, 1 << 62},
		{"zstd: bomb past the extent limit", bomb, format.CompressZstd, format.MaxExtentBytes},
		{"s2: ram larger than the block", sframe, format.CompressS2, uint64(len(small)) + 1},
		{"s2: ram smaller than the block", sframe, format.CompressS2, uint64(len(small)) - 1},
		{"s2: ram 2^62", sframe, format.CompressS2, 1 << 62},
		{"zero ram", sframe, format.CompressS2, 0},
		{"stream length past the extent", lying, format.CompressS2, uint64(len(small))},
		{"short extent", []byte{1, 0}, format.CompressS2, 10},
		{"extent past the limit", make([]byte, format.MaxExtentBytes+sector), format.CompressZstd, 10},
		{"garbage zstd", frame(text(100)), format.CompressZstd, 100},
		{"garbage s2", frame(text(100)), format.CompressS2, 100},
		{"unknown compression", sframe, format.CompressS2 + 1, uint64(len(small))},
	}
	for _, tc := range cases {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Decompress(tc.disk, tc.c, tc.ram)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, format.ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", tc.name, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 3*format.MaxExtentBytes {
			t.Errorf("%s: allocated %d bytes", tc.name, grew)
		}
	}
}

// FuzzDecompress: any extent bytes and lengths end in data of exactly ram
// bytes or ErrCorrupt, never a panic or an allocation past the limit.
func FuzzDecompress(f *testing.F) {
	small := text(3000)
	zs, _ := zstd.NewWriter(nil)
	f.Add(frame(zs.EncodeAll(small, nil)), uint8(format.CompressZstd), uint64(len(small)))
	f.Add(frame(s2.Encode(nil, small)), uint8(format.CompressS2), uint64(len(small)))
	f.Add(frame(zs.EncodeAll(make([]byte, 1<<20), nil)), uint8(format.CompressZstd), uint64(4096))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0}, uint8(format.CompressS2), uint64(1<<62))
	zs.Close()
	f.Fuzz(func(t *testing.T, disk []byte, c uint8, ram uint64) {
		out, err := Decompress(disk, format.Compression(c), ram)
		if err != nil {
			if !errors.Is(err, format.ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if uint64(len(out)) != ram {
			t.Fatalf("%d bytes, want %d", len(out), ram)
		}
	})
}
