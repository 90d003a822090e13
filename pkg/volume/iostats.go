package volume

import (
	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// DeviceIO is the I/O one command did on one device, and what it would
// have cost on a device with the item's properties (`--stats`, fsck's
// report).
type DeviceIO struct {
	DevID uint64 `json:"devid"`
	Path  string `json:"path"`
	device.Stats
	Rotational     bool    `json:"rotational"`
	ModeledSeconds float64 `json:"modeled_seconds"`
}

// IO collects the counters of the volume's devices, modeled with the
// properties of their device items.
func (v *Volume) IO(devItems []*format.DevItem) []DeviceIO {
	return DevicesIO(v.Devices(), devItems)
}

// DevicesIO collects the counters of devices taken from a volume, which
// may be closed by now (the last writes happen in Close).
func DevicesIO(devs []*Dev, devItems []*format.DevItem) []DeviceIO {
	items := make(map[uint64]*format.DevItem, len(devItems))
	for _, d := range devItems {
		items[d.DevID] = d
	}
	out := make([]DeviceIO, 0, len(devs))
	for _, d := range devs {
		s := d.Stats()
		io := DeviceIO{DevID: d.ID, Path: d.Path, Stats: s, ModeledSeconds: s.ModeledSeconds(0, 0)}
		if it := items[d.ID]; it != nil {
			io.Rotational, io.ModeledSeconds = it.Rotational, s.ModeledSeconds(it.SeekSpeed, it.Bandwidth)
		}
		out = append(out, io)
	}
	return out
}
