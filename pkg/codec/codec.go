// Package codec compresses data extents and undoes it, in the framing of
// FORMAT.md §6.6: shared by the writers (fsys) and fsck.
package codec

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/ddfs/ddfs/format"
)

// Compressed extents (FORMAT.md §6.6, IncompatCompression) hold
// [u32 LE length of the compressed stream][stream][zeros to the sector];
// the stream is one zstd frame or one s2 block of the whole extent.
const frameHeader = 4

var (
	zstdMu   sync.Mutex
	zstdEnc  = map[uint8]*zstd.Encoder{}
	zstdDec  *zstd.Decoder
	zstdOnce sync.Once
)

func zstdEncoder(level uint8) (*zstd.Encoder, error) {
	zstdMu.Lock()
	defer zstdMu.Unlock()
	if e, ok := zstdEnc[level]; ok {
		return e, nil
	}
	l := zstd.EncoderLevelFromZstd(int(max(level, 1)))
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(l), zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
	if err != nil {
		return nil, err
	}
	zstdEnc[level] = e
	return e, nil
}

// Compress frames p compressed; ok is false when that would not
// save at least a sector.
func Compress(p []byte, c format.Compression, level uint8, sector int) (framed []byte, ok bool, err error) {
	buf := make([]byte, frameHeader, frameHeader+len(p)/2)
	switch c {
	case format.CompressZstd:
		e, err := zstdEncoder(level)
		if err != nil {
			return nil, false, err
		}
		buf = e.EncodeAll(p, buf)
	case format.CompressS2:
		buf = append(buf, s2.Encode(nil, p)...)
	default:
		return nil, false, nil
	}
	binary.LittleEndian.PutUint32(buf, uint32(len(buf)-frameHeader))
	if !Saves(len(buf), len(p), sector) {
		return nil, false, nil
	}
	return buf, true, nil
}

// Saves reports whether a frame of n bytes for data of m bytes saves a
// sector: a writer stores a block compressed only then (FORMAT.md §6.6).
func Saves(n, m, sector int) bool {
	round := func(n int) int { return (n + sector - 1) / sector * sector }
	return round(n) < round(m)
}

// Decompress undoes Compress; ram is the decompressed length, which the
// stream must produce exactly. Sizes come from the image, so they are
// bounded before anything is allocated: ram and the extent by
// format.MaxExtentBytes, an s2 block by its decoded length, zstd by the
// decoder's memory cap.
func Decompress(disk []byte, c format.Compression, ram uint64) ([]byte, error) {
	if len(disk) < frameHeader || len(disk) > format.MaxExtentBytes || ram == 0 || ram > format.MaxExtentBytes {
		return nil, fmt.Errorf("compressed extent of %d bytes holding %d: %w", len(disk), ram, format.ErrCorrupt)
	}
	n := binary.LittleEndian.Uint32(disk)
	if uint64(n) > uint64(len(disk)-frameHeader) {
		return nil, fmt.Errorf("compressed length %d in an extent of %d bytes: %w", n, len(disk), format.ErrCorrupt)
	}
	stream := disk[frameHeader : frameHeader+n]
	var out []byte
	var err error
	switch c {
	case format.CompressZstd:
		zstdOnce.Do(func() {
			zstdDec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(format.MaxExtentBytes))
		})
		out, err = zstdDec.DecodeAll(stream, make([]byte, 0, ram))
	case format.CompressS2:
		var dl int
		if dl, err = s2.DecodedLen(stream); err == nil && uint64(dl) != ram {
			return nil, fmt.Errorf("s2 block of %d bytes, want %d: %w", dl, ram, format.ErrCorrupt)
		}
		if err == nil {
			out, err = s2.Decode(make([]byte, ram), stream)
		}
	default:
		return nil, fmt.Errorf("compression %v: %w", c, format.ErrCorrupt)
	}
	if err != nil {
		return nil, fmt.Errorf("decompress: %v: %w", err, format.ErrCorrupt)
	}
	if uint64(len(out)) != ram {
		return nil, fmt.Errorf("decompressed %d bytes, want %d: %w", len(out), ram, format.ErrCorrupt)
	}
	return out, nil
}
