package check

import (
	"bytes"
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// fixNodeCopy rewrites a bad copy of a node with the bytes of a copy that
// validates against the same expectation (the parent's pointer). With no
// good copy there is nothing to copy from: the problem stays.
func fixNodeCopy(vol *volume.Volume, p Problem) error {
	if p.fix == nil || p.Copy == nil {
		return nil
	}
	sb := vol.Super
	want := format.NodeExpect{FSID: sb.FSID, AltFSID: sb.NewFSID, Logical: p.Logical, Generation: p.fix.gen, Owner: p.fix.owner, Level: p.fix.level}
	buf := make([]byte, sb.NodeSize)
	for m := 0; m < vol.Copies(p.Logical); m++ {
		if m == *p.Copy || vol.ReadCopy(p.Logical, buf, m) != nil {
			continue
		}
		if _, err := format.UnmarshalNode(buf, sb.CsumType, want); err != nil {
			continue
		}
		if err := vol.WriteCopy(p.Logical, buf, *p.Copy); err != nil {
			return fmt.Errorf("rewrite %s tree node %d copy %d from copy %d: %w", p.Tree, p.Logical, *p.Copy, m, err)
		}
		return nil
	}
	return nil
}

// fixDataCopy rewrites a bad copy of a data sector with a copy whose
// checksum matches.
func fixDataCopy(vol *volume.Volume, p Problem) error {
	if p.fix == nil || p.Copy == nil {
		return nil
	}
	sb := vol.Super
	buf := make([]byte, sb.SectorSize)
	for m := 0; m < vol.Copies(p.Logical); m++ {
		if m == *p.Copy || vol.ReadCopy(p.Logical, buf, m) != nil {
			continue
		}
		if sum := format.Checksum(sb.CsumType, buf); !bytes.Equal(sum[:len(p.fix.sum)], p.fix.sum) {
			continue
		}
		if err := vol.WriteCopy(p.Logical, buf, *p.Copy); err != nil {
			return fmt.Errorf("rewrite data sector %d copy %d from copy %d: %w", p.Logical, *p.Copy, m, err)
		}
		return nil
	}
	return nil
}

// fixCopiesDiffer rewrites a copy that validates but does not fit its
// node's place from the copy that alone does, deciding again on what the
// copies hold now (another fix may have rewritten one): nothing is
// written when the place cannot decide or copy p.Copy is the one that
// fits.
func fixCopiesDiffer(vol *volume.Volume, p Problem) error {
	if p.fix == nil || p.Copy == nil {
		return nil
	}
	sb := vol.Super
	place := store.Place{NodeExpect: format.NodeExpect{FSID: sb.FSID, AltFSID: sb.NewFSID, Logical: p.Logical, Generation: p.fix.gen, Owner: p.fix.owner, Level: p.fix.level}, FirstKey: &p.fix.key}
	ch, bufs, err := store.ReadCopies(vol, sb.CsumType, sb.NodeSize, place)
	if err != nil || ch.Winner == *p.Copy || *p.Copy >= len(bufs) || bytes.Equal(bufs[*p.Copy], bufs[ch.Winner]) {
		return nil
	}
	if err := vol.WriteCopy(p.Logical, bufs[ch.Winner], *p.Copy); err != nil {
		return fmt.Errorf("rewrite %s tree node %d copy %d from copy %d: %w", p.Tree, p.Logical, *p.Copy, ch.Winner, err)
	}
	return nil
}
