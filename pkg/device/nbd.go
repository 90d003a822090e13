package device

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/ddfs/ddfs/pkg/zeros"
)

// Why our own client: libnbd's Go bindings are not on the Go module
// proxy and Debian ships no package of them (only the C library, OCaml
// and Python bindings), and the pure-Go NBD modules there are either
// unmaintained or kernel-side (they hand the socket to /dev/nbdX, which
// needs root). The protocol subset a block store needs is small.

// NBDTimeoutEnv names the environment variable with the longest wait for
// the server, as a Go duration ("30s"): for connecting, negotiating, and
// each request's reply. A server silent for longer is taken for dead.
const NBDTimeoutEnv = "DDFS_NBD_TIMEOUT"

const nbdDefaultTimeout = 30 * time.Second

// nbdDevice is an export of an NBD server. The server holds no lock for
// us: keeping other clients off an export is the server's configuration.
type nbdDevice struct {
	conn *nbdConn
	name string
	ro   bool
}

var (
	_ Device = (*nbdDevice)(nil)
	_ Prober = (*nbdDevice)(nil)
)

func nbdTimeout() (time.Duration, error) {
	v := os.Getenv(NBDTimeoutEnv)
	if v == "" {
		return nbdDefaultTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as 30s", NBDTimeoutEnv, v)
	}
	return d, nil
}

// openNBD connects and negotiates. Create has no meaning for an export:
// it exists on the server or the open fails.
func openNBD(spec string, opt OpenOptions) (Device, error) {
	t, err := parseNBD(spec)
	if err != nil {
		return nil, err
	}
	timeout, err := nbdTimeout()
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", spec, err)
	}
	c, err := net.DialTimeout(t.network, t.addr, timeout)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", spec, err)
	}
	c.SetDeadline(time.Now().Add(timeout))
	r := bufio.NewReaderSize(c, 64<<10)
	exp, err := negotiate(nbdConnWire{r: r, w: c}, t.export)
	if errors.Is(err, errNoGreeting) {
		// NBD has no locks: one writer per export is the server's to
		// enforce (README), and this is what its refusal looks like.
		c.Close()
		return nil, &BusyError{Path: spec, Why: errNoGreeting.Error() + ": it admits one client at a time (nbdkit --filter=limit, qemu-nbd --shared=1) and another holds the export, or it turned us away"}
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("open %s: %w", spec, err)
	}
	c.SetDeadline(time.Time{})
	d := &nbdDevice{name: spec, ro: opt.Mode != ReadWrite}
	if !d.ro && exp.has(nbdFlagReadOnly) {
		c.Close()
		return nil, fmt.Errorf("open %s: the server exports it read-only: %w", spec, ErrReadOnly)
	}
	d.conn = newNBDConn(c, r, exp, timeout)
	return d, nil
}

// RemoteError is a failed request to a network device. The tools name the
// device from it when they shorten an error to "IMAGE:PATH: reason".
type RemoteError struct {
	Device string
	Err    error
}

func (e *RemoteError) Error() string { return e.Err.Error() }
func (e *RemoteError) Unwrap() error { return e.Err }

// fail wraps a request's error with the device and what was asked.
func (d *nbdDevice) fail(format string, a ...any) error {
	return &RemoteError{Device: d.name, Err: fmt.Errorf(format, a...)}
}

func (d *nbdDevice) exp() *nbdExport { return d.conn.exp }

func (d *nbdDevice) Size() int64  { return d.exp().size }
func (d *nbdDevice) Name() string { return d.name }

func (d *nbdDevice) Props() Props { return Props{Rotational: d.exp().has(nbdFlagRotational)} }

// ReadAt reads in requests of at most the server's payload limit, all in
// flight at once.
func (d *nbdDevice) ReadAt(p []byte, off int64) (int, error) {
	n, eof := clipRead(d.name, off, len(p), d.Size())
	if n == 0 {
		return 0, eof
	}
	if err := d.aligned("read", off, int64(n)); err != nil {
		return 0, err
	}
	if err := d.pieces(off, p[:n], func(o int64, b []byte) error {
		return d.conn.do(nbdCmdRead, 0, uint64(o), uint32(len(b)), nil, b)
	}); err != nil {
		return 0, d.fail("read %s at %d+%d: %w", d.name, off, n, err)
	}
	return n, eof
}

// WriteAt sends zero-filled pieces as WRITE_ZEROES when the server takes
// them (no payload on the wire, and the server may leave a hole). Without
// FLUSH but with FUA, every write is forced to storage so Flush keeps its
// promise.
func (d *nbdDevice) WriteAt(p []byte, off int64) (int, error) {
	if d.ro {
		return 0, fmt.Errorf("write %s: %w", d.name, ErrReadOnly)
	}
	if err := checkRange("write", d.name, off, int64(len(p)), d.Size()); err != nil {
		return 0, err
	}
	if err := d.aligned("write", off, int64(len(p))); err != nil {
		return 0, err
	}
	var flags uint16
	if !d.exp().has(nbdFlagSendFlush) && d.exp().has(nbdFlagSendFUA) {
		flags = nbdCmdFlagFUA
	}
	zeroes := d.exp().has(nbdFlagWriteZeroes)
	err := d.pieces(off, p, func(o int64, b []byte) error {
		if zeroes && len(b) >= nbdZeroMin && zeros.Is(b) {
			return d.conn.do(nbdCmdWriteZeroes, flags, uint64(o), uint32(len(b)), nil, nil)
		}
		return d.conn.do(nbdCmdWrite, flags, uint64(o), uint32(len(b)), b, nil)
	})
	if err != nil {
		return 0, d.fail("write %s at %d+%d: %w", d.name, off, len(p), err)
	}
	return len(p), nil
}

// nbdZeroMin: smaller zero runs go as data; the check costs more than
// the bytes saved.
const nbdZeroMin = 64 << 10

// aligned refuses I/O the export's minimum block size forbids: a
// read-modify-write here would race with writes to the same block.
func (d *nbdDevice) aligned(op string, off, n int64) error {
	m := int64(d.exp().minBlock)
	if off%m != 0 || n%m != 0 {
		return fmt.Errorf("%s %s at %d+%d: the export's block size is %d", op, d.name, off, n, m)
	}
	return nil
}

// nbdPiece is the request size large I/O is cut into: a multi-threaded
// server works on the pieces in parallel (32 MiB writes to nbdkit's
// memory plugin went 4x faster cut into 2 MiB pieces).
const nbdPiece = 2 << 20

// pieces runs fn on pieces of p concurrently and returns the first error.
func (d *nbdDevice) pieces(off int64, p []byte, fn func(int64, []byte) error) error {
	max := int(min(d.exp().maxPayload, nbdPiece))
	if len(p) <= max {
		return fn(off, p)
	}
	errs := make(chan error, (len(p)+max-1)/max)
	k := 0
	for i := 0; i < len(p); i += max {
		b := p[i:min(i+max, len(p))]
		o := off + int64(i)
		k++
		go func() { errs <- fn(o, b) }()
	}
	var first error
	for ; k > 0; k-- {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Flush asks the server to make completed writes durable. A server that
// offers neither FLUSH nor FUA has no cache to flush (the spec's reading).
func (d *nbdDevice) Flush() error {
	if !d.exp().has(nbdFlagSendFlush) {
		return nil
	}
	if err := d.conn.do(nbdCmdFlush, 0, 0, 0, nil, nil); err != nil {
		return d.fail("flush %s: %w", d.name, err)
	}
	return nil
}

// Discard sends TRIM for the block-aligned part of the range, in pieces
// that fit the request's 32-bit length.
func (d *nbdDevice) Discard(off, length int64) error {
	if d.ro {
		return fmt.Errorf("discard %s: %w", d.name, ErrReadOnly)
	}
	if err := checkRange("discard", d.name, off, length, d.Size()); err != nil {
		return err
	}
	if !d.exp().has(nbdFlagSendTrim) {
		return fmt.Errorf("discard %s: %w", d.name, ErrNotSupported)
	}
	for _, c := range discardChunks(off, length, int64(d.exp().minBlock), 1<<30) {
		if err := d.conn.do(nbdCmdTrim, 0, uint64(c[0]), uint32(c[1]), nil, nil); err != nil {
			return d.fail("discard %s at %d+%d: %w", d.name, c[0], c[1], err)
		}
	}
	return nil
}

// Close disconnects. Writes not flushed may be lost, as on any device.
func (d *nbdDevice) Close() error {
	d.conn.close()
	return nil
}
