package crashtest

import (
	"io"

	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/volume"
)

func shortWriteErr() error { return io.ErrShortWrite }

func generationOf(ds []device.Device) (uint64, error) {
	vol, err := volume.FromDevices(ds, false)
	if err != nil {
		return 0, err
	}
	return vol.Super.Generation, nil
}
