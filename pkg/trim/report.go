package trim

import (
	"fmt"

	"github.com/ddfs/ddfs/pkg/units"
)

// Line is a device's line of a verbose report (trimtool -v, dedupe-tool
// run --trim -v): "trimmed", or "would trim" in a dry run.
func (r DeviceResult) Line(dry bool) string {
	verb := "trimmed"
	if dry {
		verb = "would trim"
	}
	s := fmt.Sprintf("%s (devid %d): %s %s (%d bytes) in %d discards", r.Path, r.DevID, verb, units.Human(r.Bytes), r.Bytes, r.Discards)
	if r.Note != "" {
		s += " (" + r.Note + ")"
	}
	return s
}

// Bytes is what every device got.
func (r *Result) Bytes() uint64 {
	var n uint64
	for _, d := range r.Devices {
		n += d.Bytes
	}
	return n
}
