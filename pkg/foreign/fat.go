package foreign

import (
	"encoding/binary"
	"fmt"
	"io"
)

// boundFAT checks a FAT image before go-diskfs reads it: the regions its
// BPB names lie inside the image, and no cluster chain of the first FAT
// loops or leaves the data area (go-diskfs follows a chain until its end
// mark, appending to a list, and sizes a directory's buffer by the list:
// a chain that comes back to itself would never end, one through the
// FAT's entries past the last cluster made a 40 KiB image a 2.7 GiB
// allocation).
func boundFAT(r io.ReaderAt, size int64) (identity, error) {
	boot, err := readExact(r, 512, 0)
	if err != nil {
		return identity{}, err
	}
	p, ok := parseBPB(boot)
	if !ok {
		return identity{}, corruptf("FAT boot sector")
	}
	if p.fat16Size {
		return identity{}, corruptf("FAT32 boot sector with a 16-bit FAT size (%d sectors) besides its 32-bit one", p.fatSectors)
	}
	bps := uint64(p.bytesPerSector)
	if p.totalSectors*bps > uint64(size) {
		return identity{}, corruptf("%s of %d sectors of %d bytes, image of %d bytes", p.kind, p.totalSectors, bps, size)
	}
	fatBytes := uint64(p.fatSectors) * bps
	fat := make([]byte, fatBytes) // inside the image: totalSectors covers it
	if n, err := r.ReadAt(fat, int64(uint64(p.reserved)*bps)); uint64(n) < fatBytes {
		return identity{}, corruptf("read the FAT: %v", err)
	}
	if err := checkChains(p.kind, fat, p.clusters); err != nil {
		return identity{}, err
	}
	id := identity{}
	idOff, labelOff, sigOff := 39, 43, 38
	if p.kind == FAT32 {
		idOff, labelOff, sigOff = 67, 71, 66
	}
	if boot[sigOff] == 0x29 { // extended boot signature: id and label present
		v := binary.LittleEndian.Uint32(boot[idOff:])
		id = identity{uuid: fmt.Sprintf("%04X-%04X", v>>16, v&0xffff), label: cstr(boot[labelOff : labelOff+11])}
		if id.label == "NO NAME" {
			id.label = ""
		}
	}
	return id, nil
}

// fatEntries decodes a FAT into next-cluster values (0 for free,
// reserved, bad and end marks), failing on a value that names no
// cluster of the data area (clusters 2 to clusters+1).
func fatEntries(k Kind, fat []byte, clusters uint32) ([]uint32, error) {
	var next []uint32
	bad := uint32(0x0ffffff7)
	switch k {
	case FAT12:
		n := len(fat) * 2 / 3
		next, bad = make([]uint32, n), 0xff7
		for i := 0; i < n; i++ {
			v := uint32(binary.LittleEndian.Uint16(fat[i*3/2:]))
			if i%2 == 1 {
				v >>= 4
			}
			next[i] = v & 0xfff
		}
	case FAT16:
		next, bad = make([]uint32, len(fat)/2), 0xfff7
		for i := range next {
			next[i] = uint32(binary.LittleEndian.Uint16(fat[2*i:]))
		}
	default:
		next = make([]uint32, len(fat)/4)
		for i := range next {
			next[i] = binary.LittleEndian.Uint32(fat[4*i:]) & 0x0fffffff
		}
	}
	for i, v := range next {
		switch {
		case i >= 2 && v >= 2 && v < bad && (v-2 >= clusters || v >= uint32(len(next))):
			return nil, corruptf("%s cluster %d chains to cluster %d, past the last (%d)", k, i, v, uint64(clusters)+1)
		case v < 2 || v >= bad:
			next[i] = 0 // free, reserved, bad or end of chain
		}
	}
	return next, nil
}

// checkChains fails on a cluster chain that loops or leaves the data
// area (O(clusters): each cluster is walked once).
func checkChains(k Kind, fat []byte, clusters uint32) error {
	next, err := fatEntries(k, fat, clusters)
	if err != nil {
		return err
	}
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]uint8, len(next))
	for start := 2; start < len(next); start++ {
		c := uint32(start)
		for c != 0 && state[c] == unseen {
			state[c] = onPath
			c = next[c]
		}
		if c != 0 && state[c] == onPath {
			return corruptf("%s cluster chain through cluster %d loops", k, c)
		}
		for c := uint32(start); c != 0 && state[c] == onPath; c = next[c] {
			state[c] = done
		}
	}
	return nil
}
