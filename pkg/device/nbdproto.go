package device

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
)

// NBD protocol constants (the NBD project's doc/proto.md). Everything is
// big-endian on the wire.
const (
	nbdMagic         = 0x4e42444d41474943 // "NBDMAGIC"
	nbdOptMagic      = 0x49484156454f5054 // "IHAVEOPT"
	nbdOldstyleMagic = 0x00420281861253
	nbdRepMagic      = 0x3e889045565a9
	nbdRequestMagic  = 0x25609513
	nbdSimpleMagic   = 0x67446698
	nbdStructMagic   = 0x668e33ef

	nbdFlagFixedNewstyle = 1 << 0 // handshake flags (server) and client flags
	nbdFlagNoZeroes      = 1 << 1

	nbdOptExportName      = 1
	nbdOptAbort           = 2
	nbdOptGo              = 7
	nbdOptStructuredReply = 8

	nbdRepAck    = 1
	nbdRepInfo   = 3
	nbdRepErrBit = 1 << 31
	nbdRepUnsup  = nbdRepErrBit | 1

	nbdInfoExport    = 0
	nbdInfoBlockSize = 3

	// transmission flags
	nbdFlagHasFlags    = 1 << 0
	nbdFlagReadOnly    = 1 << 1
	nbdFlagSendFlush   = 1 << 2
	nbdFlagSendFUA     = 1 << 3
	nbdFlagRotational  = 1 << 4
	nbdFlagSendTrim    = 1 << 5
	nbdFlagWriteZeroes = 1 << 6

	nbdCmdRead        = 0
	nbdCmdWrite       = 1
	nbdCmdDisc        = 2
	nbdCmdFlush       = 3
	nbdCmdTrim        = 4
	nbdCmdWriteZeroes = 6

	nbdCmdFlagFUA = 1 << 0

	nbdReplyFlagDone     = 1 << 0
	nbdReplyNone         = 0
	nbdReplyOffsetData   = 1
	nbdReplyOffsetHole   = 2
	nbdReplyErrBit       = 1 << 15
	nbdReplyError        = nbdReplyErrBit | 1
	nbdReplyErrorOffset  = nbdReplyErrBit | 2
	nbdMaxOptReply       = 64 << 10 // bound on option replies and reply chunks other than data
	nbdDefaultMaxPayload = 32 << 20 // what the spec says a server must accept
)

// ErrProtocol: the server broke the NBD protocol. The connection is
// closed and every request on it fails.
var ErrProtocol = errors.New("NBD protocol violation by the server")

// nbdExport is what negotiation learnt about the export.
type nbdExport struct {
	size       int64
	flags      uint16 // transmission flags
	structured bool   // structured replies negotiated
	minBlock   uint32 // 1 when the server stated no constraint
	maxPayload uint32
}

func (e *nbdExport) has(flag uint16) bool { return e.flags&nbdFlagHasFlags != 0 && e.flags&flag != 0 }

// nbdConnWire is the byte stream of one connection during negotiation.
type nbdConnWire struct {
	r *bufio.Reader
	w io.Writer
}

func (c nbdConnWire) read(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(c.r, b); err != nil {
		return nil, err
	}
	return b, nil
}

// negotiate runs the fixed newstyle handshake: structured replies if the
// server agrees, then NBD_OPT_GO, falling back to NBD_OPT_EXPORT_NAME on
// servers that do not know GO (or speak plain newstyle only).
// errNoGreeting: the server hung up before its greeting, which is how a
// server that admits one client at a time turns away a second one.
var errNoGreeting = errors.New("the server closed the connection before its greeting")

func negotiate(c nbdConnWire, export string) (*nbdExport, error) {
	b, err := c.read(18)
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return nil, errNoGreeting
	}
	if err != nil {
		return nil, fmt.Errorf("read server greeting: %w", err)
	}
	if binary.BigEndian.Uint64(b) != nbdMagic {
		return nil, fmt.Errorf("not an NBD server (greeting %q): %w", printable(b[:8]), ErrProtocol)
	}
	if binary.BigEndian.Uint64(b[8:]) == nbdOldstyleMagic {
		return nil, fmt.Errorf("server speaks oldstyle negotiation, which is not supported: %w", ErrProtocol)
	}
	if binary.BigEndian.Uint64(b[8:]) != nbdOptMagic {
		return nil, fmt.Errorf("unknown negotiation style: %w", ErrProtocol)
	}
	hflags := binary.BigEndian.Uint16(b[16:])
	cflags := uint32(hflags & (nbdFlagFixedNewstyle | nbdFlagNoZeroes))
	if err := writeBE(c.w, cflags); err != nil {
		return nil, err
	}
	noZeroes := hflags&nbdFlagNoZeroes != 0
	if hflags&nbdFlagFixedNewstyle == 0 {
		// Plain newstyle: any option but EXPORT_NAME may end the session.
		return exportName(c, export, noZeroes, false)
	}
	structured, err := optStructured(c)
	if err != nil {
		return nil, err
	}
	e, err := optGo(c, export)
	if errors.Is(err, errUnsupOpt) {
		return exportName(c, export, noZeroes, structured)
	}
	if err != nil {
		return nil, err
	}
	e.structured = structured
	return e, nil
}

var errUnsupOpt = errors.New("option not supported")

func sendOpt(c nbdConnWire, opt uint32, data []byte) error {
	h := make([]byte, 16, 16+len(data))
	binary.BigEndian.PutUint64(h, nbdOptMagic)
	binary.BigEndian.PutUint32(h[8:], opt)
	binary.BigEndian.PutUint32(h[12:], uint32(len(data)))
	if _, err := c.w.Write(append(h, data...)); err != nil {
		return fmt.Errorf("send option %d: %w", opt, err)
	}
	return nil
}

// optReply reads one option reply to opt, bounded.
func optReply(c nbdConnWire, opt uint32) (typ uint32, data []byte, err error) {
	h, err := c.read(20)
	if err != nil {
		return 0, nil, fmt.Errorf("read reply to option %d: %w", opt, err)
	}
	if binary.BigEndian.Uint64(h) != nbdRepMagic || binary.BigEndian.Uint32(h[8:]) != opt {
		return 0, nil, fmt.Errorf("bad reply to option %d: %w", opt, ErrProtocol)
	}
	typ = binary.BigEndian.Uint32(h[12:])
	n := binary.BigEndian.Uint32(h[16:])
	if n > nbdMaxOptReply {
		return 0, nil, fmt.Errorf("reply to option %d is %d bytes: %w", opt, n, ErrProtocol)
	}
	data, err = c.read(int(n))
	if err != nil {
		return 0, nil, fmt.Errorf("read reply to option %d: %w", opt, err)
	}
	return typ, data, nil
}

// optErr turns an error reply into an error carrying the server's text.
func optErr(opt, typ uint32, data []byte) error {
	if typ == nbdRepUnsup {
		return errUnsupOpt
	}
	msg := ""
	if len(data) > 0 {
		msg = ": " + printable(data)
	}
	return fmt.Errorf("server refused option %d (error %d)%s", opt, typ&^nbdRepErrBit, msg)
}

func optStructured(c nbdConnWire) (bool, error) {
	if err := sendOpt(c, nbdOptStructuredReply, nil); err != nil {
		return false, err
	}
	typ, _, err := optReply(c, nbdOptStructuredReply)
	switch {
	case err != nil:
		return false, err
	case typ == nbdRepAck:
		return true, nil
	case typ&nbdRepErrBit != 0:
		return false, nil // simple replies, then
	}
	return false, fmt.Errorf("reply %d to structured replies: %w", typ, ErrProtocol)
}

func optGo(c nbdConnWire, export string) (*nbdExport, error) {
	d := make([]byte, 0, 8+len(export))
	d = binary.BigEndian.AppendUint32(d, uint32(len(export)))
	d = append(d, export...)
	d = binary.BigEndian.AppendUint16(d, 1) // one info request: block sizes
	d = binary.BigEndian.AppendUint16(d, nbdInfoBlockSize)
	if err := sendOpt(c, nbdOptGo, d); err != nil {
		return nil, err
	}
	e := &nbdExport{minBlock: 1, maxPayload: nbdDefaultMaxPayload}
	gotExport := false
	for i := 0; ; i++ {
		if i > 64 {
			return nil, fmt.Errorf("too many info replies: %w", ErrProtocol)
		}
		typ, data, err := optReply(c, nbdOptGo)
		if err != nil {
			return nil, err
		}
		switch {
		case typ == nbdRepAck:
			if !gotExport {
				return nil, fmt.Errorf("server sent no export size: %w", ErrProtocol)
			}
			return e, nil
		case typ&nbdRepErrBit != 0:
			return nil, optErr(nbdOptGo, typ, data)
		case typ != nbdRepInfo:
			return nil, fmt.Errorf("reply %d to NBD_OPT_GO: %w", typ, ErrProtocol)
		}
		if err := e.info(data); err != nil {
			return nil, err
		}
		gotExport = gotExport || binary.BigEndian.Uint16(data) == nbdInfoExport
	}
}

// info reads one NBD_REP_INFO payload; unknown kinds are skipped.
func (e *nbdExport) info(d []byte) error {
	if len(d) < 2 {
		return fmt.Errorf("short info reply: %w", ErrProtocol)
	}
	switch binary.BigEndian.Uint16(d) {
	case nbdInfoExport:
		if len(d) != 12 {
			return fmt.Errorf("export info of %d bytes: %w", len(d), ErrProtocol)
		}
		return e.setSize(binary.BigEndian.Uint64(d[2:]), binary.BigEndian.Uint16(d[10:]))
	case nbdInfoBlockSize:
		if len(d) != 14 {
			return fmt.Errorf("block size info of %d bytes: %w", len(d), ErrProtocol)
		}
		minB, maxP := binary.BigEndian.Uint32(d[2:]), binary.BigEndian.Uint32(d[10:])
		if minB == 0 || minB&(minB-1) != 0 || minB > 64<<10 || maxP < minB {
			return fmt.Errorf("block sizes min %d max %d: %w", minB, maxP, ErrProtocol)
		}
		e.minBlock = minB
		e.maxPayload = min(maxP, nbdDefaultMaxPayload) / minB * minB
	}
	return nil
}

func (e *nbdExport) setSize(size uint64, flags uint16) error {
	if size > 1<<62 {
		return fmt.Errorf("export size %d: %w", size, ErrProtocol)
	}
	e.size, e.flags = int64(size), flags
	return nil
}

// exportName is the old way in: the server answers with the export or
// closes the connection.
func exportName(c nbdConnWire, export string, noZeroes, structured bool) (*nbdExport, error) {
	if err := sendOpt(c, nbdOptExportName, []byte(export)); err != nil {
		return nil, err
	}
	n := 10
	if !noZeroes {
		n += 124
	}
	b, err := c.read(n)
	if err != nil {
		return nil, fmt.Errorf("server refused export %q: %w", export, err)
	}
	e := &nbdExport{minBlock: 1, maxPayload: nbdDefaultMaxPayload, structured: structured}
	return e, e.setSize(binary.BigEndian.Uint64(b), binary.BigEndian.Uint16(b[8:]))
}

func writeBE(w io.Writer, v uint32) error {
	_, err := w.Write(binary.BigEndian.AppendUint32(nil, v))
	if err != nil {
		return fmt.Errorf("send client flags: %w", err)
	}
	return nil
}

// nbdErrno maps the protocol's error values to errnos, so callers can
// test errors.Is(err, syscall.ENOSPC) as with a local device.
func nbdErrno(v uint32) error {
	switch v {
	case 1, 5, 12, 22, 28, 75, 95, 108:
		return syscall.Errno(v)
	}
	return fmt.Errorf("error %d: %w", v, syscall.EIO)
}

// printable keeps a server's text readable and short in our messages.
func printable(b []byte) string {
	const max = 200
	if len(b) > max {
		b = b[:max]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return '?'
		}
		return r
	}, string(b))
}
