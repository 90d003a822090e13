package export

import (
	"bytes"
	"encoding/binary"
	"io"

	"github.com/klauspost/compress/zlib"
)

// squashfs metadata (the inode, directory and id tables): blocks of up to
// 8 KiB, each compressed when that is smaller, behind a 2-byte header
// (length, bit 15 set for a block stored as is).
const (
	sqMetaBlock    = 8192
	sqUncompressed = 0x8000
)

// sqCodec compresses blocks as squashfs's gzip codec: zlib streams.
type sqCodec struct {
	buf bytes.Buffer
	zw  *zlib.Writer
}

func newSQCodec() *sqCodec {
	c := &sqCodec{}
	c.zw, _ = zlib.NewWriterLevel(&c.buf, zlib.DefaultCompression) // a valid level: no error
	return c
}

// compress returns b compressed, or nil where that would not be smaller.
// The result is valid until the next call.
func (c *sqCodec) compress(b []byte) []byte {
	c.buf.Reset()
	c.zw.Reset(&c.buf)
	c.zw.Write(b) //nolint:errcheck // a bytes.Buffer does not fail
	c.zw.Close()
	if c.buf.Len() >= len(b) {
		return nil
	}
	return c.buf.Bytes()
}

// sqMeta is one metadata table being written: the blocks done, and the
// one being filled.
type sqMeta struct {
	c    *sqCodec
	done bytes.Buffer
	cur  []byte
}

// ref is where the next byte goes: the current block's offset in the
// table << 16 | the offset inside the block (squashfs's inode and
// directory references).
func (m *sqMeta) ref() uint64 { return uint64(m.done.Len())<<16 | uint64(len(m.cur)) }

func (m *sqMeta) write(b []byte) {
	for len(b) > 0 {
		n := min(len(b), sqMetaBlock-len(m.cur))
		m.cur = append(m.cur, b[:n]...)
		b = b[n:]
		if len(m.cur) == sqMetaBlock {
			m.flush()
		}
	}
}

// flush ends the current block (if it holds anything).
func (m *sqMeta) flush() {
	if len(m.cur) == 0 {
		return
	}
	out, hdr := m.c.compress(m.cur), uint16(0)
	if out == nil {
		out, hdr = m.cur, sqUncompressed
	}
	m.done.Write(binary.LittleEndian.AppendUint16(nil, hdr|uint16(len(out))))
	m.done.Write(out)
	m.cur = m.cur[:0]
}

// writeTo flushes the table and writes it out.
func (m *sqMeta) writeTo(w io.Writer) (int64, error) {
	m.flush()
	return m.done.WriteTo(w)
}
