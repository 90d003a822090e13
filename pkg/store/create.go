package store

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/volume"
)

// NewDevice is one device of a filesystem being created.
type NewDevice struct {
	Dev        device.Device
	Path       string // what the user named it
	PathHint   string // stored in the device item
	Rotational bool
	SeekSpeed  uint64
	Bandwidth  uint64
	Tier       uint8
}

// CreateParams describe a new filesystem.
type CreateParams struct {
	FSID        [16]byte
	Label       string
	Csum        format.CsumType
	NodeSize    uint32
	SectorSize  uint32
	Data        format.Profile
	Metadata    format.Profile
	AllocPolicy format.AllocPolicy
	Devices     []NewDevice
	// Compact packs small chunks at the start of each device (mkfs --shrink).
	Compact bool
	// Settings: dedupe and compression (AllocPolicy above wins).
	Settings format.Settings
}

// DevUUID derives a device's UUID from the filesystem UUID and its devid,
// so that images built twice from the same inputs are byte-identical.
func DevUUID(fsid [16]byte, devid uint64) [16]byte {
	var b [24]byte
	copy(b[:], fsid[:])
	binary.LittleEndian.PutUint64(b[16:], devid)
	sum := sha256.Sum256(b[:])
	var u [16]byte
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0f | 0x50 // version 5-like: name-based
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return u
}

// commitNonce is the nonce of commit gen (FORMAT.md §3.3): random, so
// copies of a set that commit on their own diverge visibly; derived from
// fsid and generation while the filesystem is being created.
func (fs *FS) commitNonce(gen uint64) uint64 {
	if !fs.derivedNonces {
		return rand.Uint64()
	}
	var b [24]byte
	copy(b[:], fs.sb.FSID[:])
	binary.LittleEndian.PutUint64(b[16:], gen)
	sum := sha256.Sum256(b[:])
	return binary.LittleEndian.Uint64(sum[:8])
}

// Create writes a new, empty filesystem onto the devices (devids 1..n in
// order) and returns it opened for writing.
func Create(p CreateParams) (*FS, error) {
	fs, tx, err := CreateTx(p)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return fs, nil
}

// CreateTx is Create with its first transaction left open, so the caller
// adds the first files (the root directory) to generation 1: nothing is
// on the devices until that transaction commits.
func CreateTx(p CreateParams) (*FS, *Txn, error) {
	if len(p.Devices) == 0 {
		return nil, nil, fmt.Errorf("no devices")
	}
	for _, prof := range []format.Profile{p.Data, p.Metadata} {
		pi, ok := prof.Info()
		if !ok || !prof.Supported() {
			return nil, nil, fmt.Errorf("profile %v is not supported", prof)
		}
		if len(p.Devices) < pi.MinDevices {
			return nil, nil, fmt.Errorf("profile %v needs at least %d devices, %d given", prof, pi.MinDevices, len(p.Devices))
		}
	}
	sb := format.Superblock{
		Version: format.CurrentVersion, CsumType: p.Csum, FSID: p.FSID,
		SectorSize: p.SectorSize, NodeSize: p.NodeSize, StripeLen: format.DefaultStripeLen,
		Label: p.Label, Settings: p.Settings,
	}
	sb.Settings.AllocPolicy = p.AllocPolicy
	if sb.Settings.Dedupe {
		sb.Incompat |= format.IncompatDedupe
	}
	if sb.Settings.Compression != format.CompressNone {
		sb.Incompat |= format.IncompatCompression
	}
	var devs []*volume.Dev
	fs := &FS{sb: sb, cache: newNodeCache(cacheNodes), devItems: map[uint64]*format.DevItem{}, dataProfile: p.Data, metaProfile: p.Metadata, Compact: p.Compact, disc: newDiscardState(), derivedNonces: true}
	for i, nd := range p.Devices {
		id := uint64(i + 1)
		uuid := DevUUID(p.FSID, id)
		devs = append(devs, &volume.Dev{ID: id, UUID: uuid, Path: nd.Path, Dev: nd.Dev})
		fs.devItems[id] = &format.DevItem{
			DevID: id, UUID: uuid, TotalBytes: uint64(nd.Dev.Size()), Rotational: nd.Rotational,
			SeekSpeed: nd.SeekSpeed, Bandwidth: nd.Bandwidth, Tier: nd.Tier, Path: nd.PathHint,
		}
		fs.sb.TotalBytes += uint64(nd.Dev.Size())
	}
	fs.sb.NumDevices = uint64(len(devs))
	fs.Vol = volume.New(devs, &fs.sb, true)
	tx, err := fs.Begin()
	if err != nil {
		return nil, nil, err
	}
	// One chunk of each type up front, so the first writes need no chunk
	// allocation and the layout is predictable.
	for _, t := range []format.ChunkType{format.ChunkSystem, format.ChunkMetadata, format.ChunkData} {
		if _, err := tx.newChunk(t); err != nil {
			tx.Abort()
			return nil, nil, fmt.Errorf("create first %v chunk: %w", t, err)
		}
	}
	for _, id := range []format.TreeID{format.ChunkTree, format.ExtentTree, format.FSTree} {
		if err := tx.Tree(id).EnsureRoot(); err != nil {
			tx.Abort()
			return nil, nil, err
		}
	}
	tx.devDirty = true
	return fs, tx, nil
}
