package device

import (
	"sync"
)

// Stats is the I/O accounting of one device.
type Stats struct {
	Reads        uint64 `json:"reads"`
	ReadBytes    uint64 `json:"read_bytes"`
	Writes       uint64 `json:"writes"`
	WriteBytes   uint64 `json:"write_bytes"`
	Flushes      uint64 `json:"flushes"`
	Discards     uint64 `json:"discards"`
	DiscardBytes uint64 `json:"discard_bytes"`
	// Seeks estimates head movements: requests that do not start where
	// the previous one ended.
	Seeks uint64 `json:"seeks"`
}

// ModeledSeconds is what the I/O would cost on a device with these
// properties: seeks / seek_speed + bytes / bandwidth.
func (s Stats) ModeledSeconds(seekSpeed, bandwidth uint64) float64 {
	t := 0.0
	if seekSpeed > 0 {
		t += float64(s.Seeks) / float64(seekSpeed)
	}
	if bandwidth > 0 {
		t += float64(s.ReadBytes+s.WriteBytes) / float64(bandwidth)
	}
	return t
}

// Counting wraps a Device and counts its I/O.
type Counting struct {
	Device
	mu    sync.Mutex
	s     Stats
	next  int64 // where the previous request ended
	begun bool
}

// NewCounting wraps dev.
func NewCounting(dev Device) *Counting { return &Counting{Device: dev} }

// Stats returns a snapshot of the counters.
func (c *Counting) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s
}

func (c *Counting) seek(off, n int64) {
	if c.begun && off != c.next {
		c.s.Seeks++
	}
	c.begun, c.next = true, off+n
}

func (c *Counting) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.Device.ReadAt(p, off)
	c.mu.Lock()
	c.s.Reads++
	c.s.ReadBytes += uint64(n)
	c.seek(off, int64(n))
	c.mu.Unlock()
	return n, err
}

func (c *Counting) WriteAt(p []byte, off int64) (int, error) {
	n, err := c.Device.WriteAt(p, off)
	c.mu.Lock()
	c.s.Writes++
	c.s.WriteBytes += uint64(n)
	c.seek(off, int64(n))
	c.mu.Unlock()
	return n, err
}

func (c *Counting) Flush() error {
	err := c.Device.Flush()
	c.mu.Lock()
	c.s.Flushes++
	c.mu.Unlock()
	return err
}

func (c *Counting) Discard(off, length int64) error {
	err := c.Device.Discard(off, length)
	c.mu.Lock()
	c.s.Discards++
	c.s.DiscardBytes += uint64(length)
	c.mu.Unlock()
	return err
}

// Props looks through the wrapper.
func (c *Counting) Props() Props { return PropsOf(c.Device) }

// Unwrap returns the wrapped device.
func (c *Counting) Unwrap() Device { return c.Device }
