package device

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
)

// OpKind names a device operation in logs and fault rules.
type OpKind int

const (
	OpWrite OpKind = iota + 1
	OpFlush
	OpDiscard
	OpRead // only seen by fault rules; Recorder does not log reads
)

func (k OpKind) String() string {
	switch k {
	case OpWrite:
		return "write"
	case OpFlush:
		return "flush"
	case OpDiscard:
		return "discard"
	case OpRead:
		return "read"
	}
	return "OpKind(" + strconv.Itoa(int(k)) + ")"
}

// Op is one logged operation.
type Op struct {
	Kind OpKind
	Dev  int    // index given to Log.Wrap
	Off  int64  // write and discard
	Data []byte // write: copy of what reached the device
	Len  int64  // discard length; len(Data) for writes
}

// Log records the operations of a set of devices in one global order, so a
// test can rebuild every device's image at any flush point.
type Log struct {
	mu  sync.Mutex
	ops []Op
}

func NewLog() *Log { return &Log{} }

// Wrap returns dev recording into l under the given device index.
func (l *Log) Wrap(dev Device, index int) Device {
	return &Recorder{dev: dev, log: l, index: index}
}

// Ops returns a copy of the log so far.
func (l *Log) Ops() []Op {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Op(nil), l.ops...)
}

func (l *Log) add(op Op) {
	l.mu.Lock()
	l.ops = append(l.ops, op)
	l.mu.Unlock()
}

// FlushPoints returns every i such that ops[:i] ends with a flush: the
// prefixes whose effects a crash must preserve.
func FlushPoints(ops []Op) []int {
	var pts []int
	for i, op := range ops {
		if op.Kind == OpFlush {
			pts = append(pts, i+1)
		}
	}
	return pts
}

// Recorder is a Device that logs each completed operation into a Log. An
// operation is logged after it returns, so the log order is an order the
// device really saw for non-overlapping callers.
type Recorder struct {
	dev   Device
	log   *Log
	index int
}

var _ Device = (*Recorder)(nil)

func (r *Recorder) ReadAt(p []byte, off int64) (int, error) { return r.dev.ReadAt(p, off) }

func (r *Recorder) WriteAt(p []byte, off int64) (int, error) {
	n, err := r.dev.WriteAt(p, off)
	if n > 0 {
		// A short write still changed n bytes on the device.
		r.log.add(Op{Kind: OpWrite, Dev: r.index, Off: off, Data: append([]byte(nil), p[:n]...), Len: int64(n)})
	}
	return n, err
}

func (r *Recorder) Flush() error {
	if err := r.dev.Flush(); err != nil {
		return err
	}
	r.log.add(Op{Kind: OpFlush, Dev: r.index})
	return nil
}

func (r *Recorder) Discard(off, length int64) error {
	if err := r.dev.Discard(off, length); err != nil {
		return err
	}
	r.log.add(Op{Kind: OpDiscard, Dev: r.index, Off: off, Len: length})
	return nil
}

func (r *Recorder) Size() int64    { return r.dev.Size() }
func (r *Recorder) Close() error   { return r.dev.Close() }
func (r *Recorder) Name() string   { return r.dev.Name() }
func (r *Recorder) Props() Props   { return PropsOf(r.dev) }
func (r *Recorder) Unwrap() Device { return r.dev }

// Replay applies ops[:upto] to devs (normally fresh MemDevices), indexed by
// Op.Dev, flushing where the log flushed.
func Replay(ops []Op, upto int, devs []*MemDevice) error {
	if upto < 0 || upto > len(ops) {
		return fmt.Errorf("replay: upto %d outside log of %d ops", upto, len(ops))
	}
	for i, op := range ops[:upto] {
		if op.Dev < 0 || op.Dev >= len(devs) || devs[op.Dev] == nil {
			return fmt.Errorf("replay: op %d: no device %d", i, op.Dev)
		}
		d := devs[op.Dev]
		var err error
		switch op.Kind {
		case OpWrite:
			_, err = d.WriteAt(op.Data, op.Off)
		case OpDiscard:
			err = d.Discard(op.Off, op.Len)
		case OpFlush:
			err = d.Flush()
		default:
			err = fmt.Errorf("unknown kind %v", op.Kind)
		}
		if err != nil {
			return fmt.Errorf("replay: op %d (%v on device %d): %w", i, op.Kind, op.Dev, err)
		}
	}
	return nil
}

// ReplayCrash rebuilds a state a power cut right after ops[:upto] can
// leave: each device keeps every write it had before its own last flush
// and a random subset of its later ones, in issue order, the last kept one
// possibly torn (MemDevice.CrashPartial). A flush of one device makes
// nothing durable on another, so a commit that forgets to flush some
// device shows up here.
func ReplayCrash(ops []Op, upto int, devs []*MemDevice, rng *rand.Rand) error {
	if err := Replay(ops, upto, devs); err != nil {
		return err
	}
	for _, d := range devs {
		d.CrashPartial(rng)
	}
	return nil
}
