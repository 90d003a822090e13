package trim

import (
	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
)

// Untrimmed is the free space the devices still hold: of what Run would
// discard on an agreeing filesystem (device space outside chunks, free
// ranges inside chunks on every copy, never the protected areas), the
// bytes the storage still backs, such as an image file's data, not its
// holes. Devices that cannot tell (block devices, NBD exports) count
// nothing. It reads the allocation metadata only, a block group at a
// time: no walk of the trees (that is Run's safety check before it
// discards; this discards nothing), no memory beyond one group's ranges.
func Untrimmed(fs *store.FS) (uint64, error) {
	free := map[uint64][]alloc.Range{}
	for _, ds := range fs.DeviceSpace() {
		free[ds.DevID] = append(free[ds.DevID], ds.Holes()...)
	}
	n, err := mappedFree(fs, free)
	if err != nil {
		return 0, err
	}
	for _, bg := range fs.BlockGroups() {
		rs, err := fs.FreeRanges(bg)
		if err != nil {
			return 0, err
		}
		clear(free)
		if err := onDevices(fs, rs, free); err != nil {
			return 0, err
		}
		m, err := mappedFree(fs, free)
		if err != nil {
			return 0, err
		}
		n += m
	}
	return n, nil
}

// mappedFree is the bytes of each device's ranges in free that the
// device still backs (0 on a device that cannot tell).
func mappedFree(fs *store.FS, free map[uint64][]alloc.Range) (uint64, error) {
	var n uint64
	for _, d := range fs.Vol.Devices() {
		for _, r := range merge(free[d.ID]) {
			m, ok, err := device.MappedOf(d.Dev, int64(r.Start), int64(r.Len))
			if err != nil {
				return 0, err
			}
			if !ok {
				break
			}
			n += uint64(m)
		}
	}
	return n, nil
}
