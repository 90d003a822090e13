package device

import (
	"encoding/binary"
	"fmt"
	"io"
	"sort"
)

// structReply reads one structured reply chunk. Chunk lengths are checked
// against what the request can take before anything is read or allocated.
func (nc *nbdConn) structReply() error {
	var h [16]byte
	if _, err := io.ReadFull(nc.r, h[:]); err != nil {
		return err
	}
	flags, typ := binary.BigEndian.Uint16(h[0:]), binary.BigEndian.Uint16(h[2:])
	handle, n := binary.BigEndian.Uint64(h[4:]), binary.BigEndian.Uint32(h[12:])
	call, err := nc.lookup(handle)
	if err != nil {
		return err
	}
	switch {
	case typ == nbdReplyNone:
		if n != 0 || flags&nbdReplyFlagDone == 0 {
			return fmt.Errorf("bad NONE chunk: %w", ErrProtocol)
		}
	case typ == nbdReplyOffsetData || typ == nbdReplyOffsetHole:
		if err := nc.readChunk(call, typ, n); err != nil {
			return err
		}
	case typ&nbdReplyErrBit != 0:
		if err := nc.errorChunk(call, typ, n); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unexpected reply chunk type %d: %w", typ, ErrProtocol)
	}
	if flags&nbdReplyFlagDone == 0 {
		return nil
	}
	err = call.err
	if err == nil && call.cmd == nbdCmdRead && !(len(call.have) == 1 && call.have[0] == [2]uint64{call.off, call.off + uint64(len(call.buf))}) {
		return fmt.Errorf("read reply at %d+%d does not cover the request: %w", call.off, len(call.buf), ErrProtocol)
	}
	nc.finish(handle, call, err)
	return nil
}

// readChunk places an OFFSET_DATA or OFFSET_HOLE chunk into the read's
// buffer, refusing chunks outside the request or over earlier ones.
func (nc *nbdConn) readChunk(call *nbdCall, typ uint16, n uint32) error {
	if call.cmd != nbdCmdRead {
		return fmt.Errorf("read data in reply to command %d: %w", call.cmd, ErrProtocol)
	}
	if call.chunks++; call.chunks > nbdMaxChunks {
		return fmt.Errorf("more than %d chunks for one read: %w", nbdMaxChunks, ErrProtocol)
	}
	if n < 8 || (typ == nbdReplyOffsetHole && n != 12) || (typ == nbdReplyOffsetData && uint64(n-8) > uint64(len(call.buf))) {
		return fmt.Errorf("read chunk type %d of %d bytes for a %d-byte read: %w", typ, n, len(call.buf), ErrProtocol)
	}
	var b [12]byte
	hdr := b[:8]
	if typ == nbdReplyOffsetHole {
		hdr = b[:12]
	}
	if _, err := io.ReadFull(nc.r, hdr); err != nil {
		return err
	}
	off := binary.BigEndian.Uint64(b[:])
	length := uint64(n - 8)
	if typ == nbdReplyOffsetHole {
		length = uint64(binary.BigEndian.Uint32(b[8:]))
	}
	end := call.off + uint64(len(call.buf))
	if length == 0 || off < call.off || off > end || length > end-off {
		return fmt.Errorf("read chunk at %d+%d outside the request %d+%d: %w", off, length, call.off, len(call.buf), ErrProtocol)
	}
	if err := call.claim(off, off+length); err != nil {
		return err
	}
	dst := call.buf[off-call.off : off-call.off+length]
	if typ == nbdReplyOffsetHole {
		clear(dst)
		return nil
	}
	_, err := io.ReadFull(nc.r, dst)
	return err
}

// claim records [start, end) as received; overlap is a violation.
func (c *nbdCall) claim(start, end uint64) error {
	i := sort.Search(len(c.have), func(i int) bool { return c.have[i][1] > start })
	if i < len(c.have) && c.have[i][0] < end {
		return fmt.Errorf("read chunk %d-%d overlaps an earlier one: %w", start, end, ErrProtocol)
	}
	switch {
	case i > 0 && c.have[i-1][1] == start && i < len(c.have) && c.have[i][0] == end:
		c.have[i-1][1] = c.have[i][1]
		c.have = append(c.have[:i], c.have[i+1:]...)
	case i > 0 && c.have[i-1][1] == start:
		c.have[i-1][1] = end
	case i < len(c.have) && c.have[i][0] == end:
		c.have[i][0] = start
	default:
		c.have = append(c.have, [2]uint64{})
		copy(c.have[i+1:], c.have[i:])
		c.have[i] = [2]uint64{start, end}
	}
	return nil
}

// errorChunk records the first error of a call with the server's message.
func (nc *nbdConn) errorChunk(call *nbdCall, typ uint16, n uint32) error {
	if n < 6 || n > nbdMaxOptReply {
		return fmt.Errorf("error chunk of %d bytes: %w", n, ErrProtocol)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(nc.r, b); err != nil {
		return err
	}
	code, msgLen := binary.BigEndian.Uint32(b), int(binary.BigEndian.Uint16(b[4:]))
	want := 6 + msgLen
	if typ == nbdReplyErrorOffset {
		want += 8
	}
	if code == 0 || (typ&^nbdReplyErrBit <= 2 && int(n) != want) || want > int(n) {
		return fmt.Errorf("malformed error chunk: %w", ErrProtocol)
	}
	if call.err == nil {
		err := nbdErrno(code)
		if msgLen > 0 {
			err = fmt.Errorf("%w (server: %s)", err, printable(b[6:6+msgLen]))
		}
		call.err = err
	}
	return nil
}
