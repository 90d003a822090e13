package store

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/volume"
)

// UpdateDevice changes a device item (properties) in a transaction.
func (fs *FS) UpdateDevice(devid uint64, change func(*format.DevItem) error) error {
	d, ok := fs.devItems[devid]
	if !ok {
		return fmt.Errorf("no device %d in this filesystem", devid)
	}
	tx, err := fs.Begin()
	if err != nil {
		return err
	}
	cp := *d
	if err := change(&cp); err != nil {
		tx.Abort()
		return err
	}
	*d = cp
	fs.tierCache = nil
	tx.devDirty = true
	return tx.Commit()
}

// AddDevice makes an opened device a member of the set (devid = the
// highest + 1) and commits; the commit writes its superblocks, and new
// chunks may use it from then on.
func (fs *FS) AddDevice(nd NewDevice) (uint64, error) {
	tx, err := fs.Begin()
	if err != nil {
		return 0, err
	}
	id := tx.addDevice(nd)
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	return id, nil
}

// addDevice makes nd a member in this transaction and returns its devid.
func (tx *Txn) addDevice(nd NewDevice) uint64 {
	fs := tx.fs
	id := fs.nextDevID()
	uuid := DevUUID(fs.sb.FSID, id)
	fs.devItems[id] = &format.DevItem{
		DevID: id, UUID: uuid, TotalBytes: uint64(nd.Dev.Size()), Rotational: nd.Rotational,
		SeekSpeed: nd.SeekSpeed, Bandwidth: nd.Bandwidth, Tier: nd.Tier, Path: nd.PathHint,
	}
	fs.Vol.AttachDevice(&volume.Dev{ID: id, UUID: uuid, Path: nd.Path, Dev: nd.Dev})
	fs.tierCache = nil
	tx.devDirty = true
	if tx.addedDevs == nil {
		tx.addedDevs = map[uint64]bool{}
	}
	tx.addedDevs[id] = true
	return id
}

// nextDevID is the devid a device added now gets: the highest + 1.
func (fs *FS) nextDevID() uint64 {
	id := uint64(0)
	for d := range fs.devItems {
		id = max(id, d)
	}
	return id + 1
}
