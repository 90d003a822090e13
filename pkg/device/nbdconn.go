package device

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// nbdConn carries requests on one connection: senders write under wmu,
// one reader goroutine matches replies to waiting calls by handle and
// reads read data straight into the caller's buffer. Any protocol
// violation, I/O error or timeout kills the connection and fails every
// call on it; a call returns only once the reader no longer touches it.
type nbdConn struct {
	c       net.Conn
	r       *bufio.Reader
	exp     *nbdExport
	timeout time.Duration

	wmu sync.Mutex

	mu      sync.Mutex
	pending map[uint64]*nbdCall
	next    uint64
	dead    error
	done    chan struct{} // closed when the reader has exited
}

// nbdCall is one request in flight.
type nbdCall struct {
	cmd    uint16
	off    uint64
	buf    []byte      // read destination; len is the request length
	have   [][2]uint64 // read chunks received, sorted, merged: [start, end)
	chunks int
	err    error // first error reply
	fin    chan error
}

// nbdMaxChunks bounds the reply chunks of one read, so a hostile server
// cannot make overlap bookkeeping quadratic.
const nbdMaxChunks = 4096

func newNBDConn(c net.Conn, r *bufio.Reader, exp *nbdExport, timeout time.Duration) *nbdConn {
	nc := &nbdConn{c: c, r: r, exp: exp, timeout: timeout, pending: map[uint64]*nbdCall{}, done: make(chan struct{})}
	go nc.readLoop()
	return nc
}

// do sends one request and waits for its reply.
func (nc *nbdConn) do(cmd, flags uint16, off uint64, length uint32, payload, buf []byte) error {
	call := &nbdCall{cmd: cmd, off: off, buf: buf, fin: make(chan error, 1)}
	nc.mu.Lock()
	if nc.dead != nil {
		nc.mu.Unlock()
		return nc.dead
	}
	nc.next++
	handle := nc.next
	nc.pending[handle] = call
	nc.mu.Unlock()

	if err := nc.send(cmd, flags, handle, off, length, payload); err != nil {
		nc.kill(fmt.Errorf("send: %w", err))
		return <-call.fin
	}
	t := time.NewTimer(nc.timeout)
	defer t.Stop()
	select {
	case err := <-call.fin:
		return err
	case <-t.C:
		nc.kill(fmt.Errorf("no reply within %v (set %s to wait longer)", nc.timeout, NBDTimeoutEnv))
		return <-call.fin
	}
}

func (nc *nbdConn) send(cmd, flags uint16, handle, off uint64, length uint32, payload []byte) error {
	var h [28]byte
	binary.BigEndian.PutUint32(h[0:], nbdRequestMagic)
	binary.BigEndian.PutUint16(h[4:], flags)
	binary.BigEndian.PutUint16(h[6:], cmd)
	binary.BigEndian.PutUint64(h[8:], handle)
	binary.BigEndian.PutUint64(h[16:], off)
	binary.BigEndian.PutUint32(h[24:], length)
	nc.wmu.Lock()
	defer nc.wmu.Unlock()
	nc.c.SetWriteDeadline(time.Now().Add(nc.timeout))
	bufs := net.Buffers{h[:]}
	if len(payload) > 0 {
		bufs = append(bufs, payload)
	}
	_, err := bufs.WriteTo(nc.c)
	return err
}

// kill marks the connection dead with err (the first cause wins), closes
// it so the reader stops, and fails every pending call.
func (nc *nbdConn) kill(err error) {
	nc.mu.Lock()
	if nc.dead == nil {
		nc.dead = err
	}
	nc.mu.Unlock()
	nc.c.Close()
	<-nc.done
}

// close sends NBD_CMD_DISC (best effort) and tears the connection down.
func (nc *nbdConn) close() {
	nc.mu.Lock()
	alive := nc.dead == nil && len(nc.pending) == 0
	nc.mu.Unlock()
	if alive {
		_ = nc.send(nbdCmdDisc, 0, 0, 0, 0, nil)
	}
	nc.kill(errors.New("device closed"))
}

func (nc *nbdConn) readLoop() {
	var err error
	for err == nil {
		err = nc.readReply()
	}
	nc.mu.Lock()
	if nc.dead == nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("server closed the connection: %w", err)
		}
		nc.dead = err
	}
	dead := nc.dead
	for h, call := range nc.pending {
		call.fin <- dead
		delete(nc.pending, h)
	}
	nc.mu.Unlock()
	nc.c.Close()
	close(nc.done)
}

// lookup finds the call a reply is for; an unknown handle is a protocol
// violation (we never reuse handles).
func (nc *nbdConn) lookup(handle uint64) (*nbdCall, error) {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	call, ok := nc.pending[handle]
	if !ok {
		return nil, fmt.Errorf("reply for unknown handle %d: %w", handle, ErrProtocol)
	}
	return call, nil
}

func (nc *nbdConn) finish(handle uint64, call *nbdCall, err error) {
	nc.mu.Lock()
	delete(nc.pending, handle)
	nc.mu.Unlock()
	call.fin <- err
}

func (nc *nbdConn) readReply() error {
	var m [4]byte
	if _, err := io.ReadFull(nc.r, m[:]); err != nil {
		return err
	}
	switch binary.BigEndian.Uint32(m[:]) {
	case nbdSimpleMagic:
		return nc.simpleReply()
	case nbdStructMagic:
		if !nc.exp.structured {
			return fmt.Errorf("structured reply that was not negotiated: %w", ErrProtocol)
		}
		return nc.structReply()
	}
	return fmt.Errorf("bad reply magic %#x: %w", m, ErrProtocol)
}

func (nc *nbdConn) simpleReply() error {
	var h [12]byte
	if _, err := io.ReadFull(nc.r, h[:]); err != nil {
		return err
	}
	code, handle := binary.BigEndian.Uint32(h[:]), binary.BigEndian.Uint64(h[4:])
	call, err := nc.lookup(handle)
	if err != nil {
		return err
	}
	if code != 0 {
		nc.finish(handle, call, nbdErrno(code))
		return nil
	}
	if call.cmd == nbdCmdRead {
		// With structured replies on, a simple reply cannot say whether
		// data follows: the stream is lost.
		if nc.exp.structured {
			return fmt.Errorf("simple reply with data to a read: %w", ErrProtocol)
		}
		if _, err := io.ReadFull(nc.r, call.buf); err != nil {
			return err
		}
	}
	nc.finish(handle, call, nil)
	return nil
}
