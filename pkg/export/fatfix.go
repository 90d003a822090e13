package export

// fatFix mends what go-diskfs v1.9.4's FAT32 writer gets wrong, found by
// fsck.fat on its images: an empty file keeps the cluster its creation
// took (a chain longer than the file), the ".." entry of a directory in
// the root names the root's cluster where FAT wants 0, the FSInfo
// free-cluster count is left unknown, and the FAT is sized for the data
// clusters without its two reserved entries (fsck.fat: "129024 clusters
// but only space for 129022 FAT entries" at 64 MiB): the boot sector's
// sector count is cut to what the FAT maps. The image is read as hostile input
// all the same: every field is bounded before it is used.

import (
	"encoding/binary"
	"fmt"
	"os"
)

const (
	fatEOC       = 0x0FFFFFF8 // at and above: end of a chain
	fatMask      = 0x0FFFFFFF
	fatMaxTable  = 256 << 20 // a FAT this large is not one we wrote
	fsInfoLead   = 0x41615252
	fsInfoStruct = 0x61417272
)

type fatGeom struct {
	bps, spc, reserved, nfats uint64
	fatSectors, clusters      uint64
	dataStart, root, fsInfo   uint64
	backupBoot, total         uint64 // total: sectors the boot sector says
}

func readFATGeom(w *os.File) (fatGeom, error) {
	var b [512]byte
	if _, err := w.ReadAt(b[:], 0); err != nil {
		return fatGeom{}, err
	}
	le16 := func(o int) uint64 { return uint64(binary.LittleEndian.Uint16(b[o:])) }
	le32 := func(o int) uint64 { return uint64(binary.LittleEndian.Uint32(b[o:])) }
	g := fatGeom{bps: le16(11), spc: uint64(b[13]), reserved: le16(14), nfats: uint64(b[16]),
		fatSectors: le32(36), root: le32(44), fsInfo: le16(48), backupBoot: le16(50)}
	total := le32(32)
	switch {
	case g.bps != 512 && g.bps != 4096, g.spc == 0 || g.spc > 128 || g.spc&(g.spc-1) != 0,
		g.nfats == 0 || g.nfats > 2, g.fatSectors == 0 || g.fatSectors*g.bps > fatMaxTable:
		return g, fmt.Errorf("fat32: boot sector: not the geometry written")
	}
	g.dataStart = g.reserved + g.nfats*g.fatSectors
	if total <= g.dataStart {
		return g, fmt.Errorf("fat32: boot sector: no data area")
	}
	g.total = total
	g.clusters = min((total-g.dataStart)/g.spc, g.fatSectors*g.bps/4-2)
	if g.root < 2 || g.root >= g.clusters+2 {
		return g, fmt.Errorf("fat32: root cluster %d out of range", g.root)
	}
	return g, nil
}

func (g fatGeom) clusterOff(c uint64) int64 {
	return int64((g.dataStart + (c-2)*g.spc) * g.bps)
}

// fatFix mends the FAT32 image w (see above).
func fatFix(w *os.File) error {
	g, err := readFATGeom(w)
	if err != nil {
		return err
	}
	fi, err := w.Stat()
	if err != nil {
		return err
	}
	if uint64(fi.Size()) < g.dataStart*g.bps { // the FATs must be in the file before one is read
		return fmt.Errorf("fat32: %d bytes hold no data area at sector %d", fi.Size(), g.dataStart)
	}
	fat := make([]byte, g.fatSectors*g.bps)
	if _, err := w.ReadAt(fat, int64(g.reserved*g.bps)); err != nil {
		return err
	}
	fx := &fatFixer{w: w, g: g, fat: fat}
	if err := fx.walk(); err != nil { // every chain inside the clusters the FAT maps
		return err
	}
	if err := fx.fitTotal(); err != nil {
		return err
	}
	if fx.fatChanged {
		for i := range g.nfats {
			if _, err := w.WriteAt(fat, int64((g.reserved+i*g.fatSectors)*g.bps)); err != nil {
				return err
			}
		}
	}
	return fx.fsInfo()
}

type fatFixer struct {
	w          *os.File
	g          fatGeom
	fat        []byte
	fatChanged bool
}

func (fx *fatFixer) next(c uint64) uint64 {
	return uint64(binary.LittleEndian.Uint32(fx.fat[c*4:])) & fatMask
}

// chain lists a chain's clusters, refusing a loop or a cluster out of
// range.
func (fx *fatFixer) chain(c uint64) ([]uint64, error) {
	var out []uint64
	for c < fatEOC {
		if c < 2 || c >= fx.g.clusters+2 || uint64(len(out)) > fx.g.clusters {
			return nil, fmt.Errorf("fat32: cluster chain through %d: out of range or looping", c)
		}
		out = append(out, c)
		c = fx.next(c)
	}
	return out, nil
}

// walk visits every directory from the root, mending entries.
func (fx *fatFixer) walk() error {
	type dir struct {
		cluster uint64
		inRoot  bool // its parent is the root
	}
	todo := []dir{{fx.g.root, false}}
	seen := map[uint64]bool{fx.g.root: true}
	for len(todo) > 0 {
		d := todo[0]
		todo = todo[1:]
		sub, err := fx.dir(d.cluster, d.inRoot)
		if err != nil {
			return err
		}
		for _, c := range sub {
			if seen[c] {
				return fmt.Errorf("fat32: directory cluster %d reached twice", c)
			}
			seen[c] = true
			todo = append(todo, dir{c, d.cluster == fx.g.root})
		}
	}
	return nil
}

// dir mends one directory's entries and returns its subdirectories.
func (fx *fatFixer) dir(first uint64, inRoot bool) ([]uint64, error) {
	cs, err := fx.chain(first)
	if err != nil {
		return nil, err
	}
	cb := fx.g.spc * fx.g.bps
	buf := make([]byte, cb)
	var sub []uint64
	for _, c := range cs {
		if _, err := fx.w.ReadAt(buf, fx.g.clusterOff(c)); err != nil {
			return nil, err
		}
		dirty := false
		for o := uint64(0); o+32 <= cb; o += 32 {
			e := buf[o : o+32]
			if e[0] == 0 {
				break
			}
			if e[0] == 0xE5 || e[11] == 0x0F || e[11]&0x08 != 0 {
				continue // deleted, a long-name slot, the volume label
			}
			ec := uint64(binary.LittleEndian.Uint16(e[20:]))<<16 | uint64(binary.LittleEndian.Uint16(e[26:]))
			switch {
			case e[0] == '.' && e[1] == '.' && e[2] == ' ':
				if inRoot && ec != 0 { // ".." of a directory in the root is cluster 0
					clear(e[20:22])
					clear(e[26:28])
					dirty = true
				}
			case e[0] == '.' && e[1] == ' ':
			case e[11]&0x10 != 0:
				if ec < 2 || ec >= fx.g.clusters+2 {
					return nil, fmt.Errorf("fat32: directory entry names cluster %d", ec)
				}
				sub = append(sub, ec)
			case binary.LittleEndian.Uint32(e[28:]) == 0 && ec != 0:
				if err := fx.free(ec); err != nil {
					return nil, err
				}
				clear(e[20:22])
				clear(e[26:28])
				dirty = true
			}
		}
		if dirty {
			if _, err := fx.w.WriteAt(buf, fx.g.clusterOff(c)); err != nil {
				return nil, err
			}
		}
	}
	return sub, nil
}

// fitTotal cuts the boot sector's (and its backup's) sector count to
// the clusters the FAT maps, where it says more.
func (fx *fatFixer) fitTotal() error {
	g := fx.g
	fits := g.dataStart + g.clusters*g.spc
	if g.total <= fits {
		return nil
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(fits))
	secs := []uint64{0}
	if g.backupBoot != 0 && g.backupBoot < g.reserved {
		secs = append(secs, g.backupBoot)
	}
	for _, sec := range secs {
		if _, err := fx.w.WriteAt(b[:], int64(sec*g.bps+32)); err != nil {
			return err
		}
	}
	return nil
}

// free returns a chain's clusters to the FAT.
func (fx *fatFixer) free(c uint64) error {
	cs, err := fx.chain(c)
	if err != nil {
		return err
	}
	for _, c := range cs {
		binary.LittleEndian.PutUint32(fx.fat[c*4:], binary.LittleEndian.Uint32(fx.fat[c*4:])&^fatMask)
	}
	fx.fatChanged = true
	return nil
}

// fsInfo writes the free-cluster count and the next free cluster into
// the FSInfo sector and its backup.
func (fx *fatFixer) fsInfo() error {
	var free, first uint64
	for c := uint64(2); c < fx.g.clusters+2; c++ {
		if fx.next(c) == 0 {
			if free == 0 {
				first = c
			}
			free++
		}
	}
	for _, sec := range []uint64{fx.g.fsInfo, fx.g.backupBoot + fx.g.fsInfo} {
		if sec == 0 || sec >= fx.g.reserved {
			continue
		}
		var b [512]byte
		if _, err := fx.w.ReadAt(b[:], int64(sec*fx.g.bps)); err != nil {
			return err
		}
		if binary.LittleEndian.Uint32(b[0:]) != fsInfoLead || binary.LittleEndian.Uint32(b[484:]) != fsInfoStruct {
			continue
		}
		binary.LittleEndian.PutUint32(b[488:], uint32(free))
		binary.LittleEndian.PutUint32(b[492:], uint32(first))
		if _, err := fx.w.WriteAt(b[:], int64(sec*fx.g.bps)); err != nil {
			return err
		}
	}
	return nil
}
