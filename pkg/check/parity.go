package check

import (
	"fmt"
	"sort"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/volume"
)

// parityRows (--check-data) checks the parity of every row of a raid5/
// raid6 data chunk that holds an extent, against the data strips as the
// devices hold them: PARITY_BAD for each parity strip that differs,
// reported only (scrub --repair rewrites it once the row's data checks
// out). Node rows are checked as the nodes' rebuilt copies are read.
func (c *checker) parityRows() {
	if !c.opt.CheckData {
		return
	}
	rows := map[*volume.Chunk]map[uint64]bool{}
	for _, e := range c.fs.extents.list {
		ch, ok := c.vol.Chunks.Lookup(e.logical)
		if !ok || !ch.IsParity() || ch.Type != format.ChunkData || uint64(e.length) > ch.End()-e.logical || c.vol.ChunkDegraded(ch) {
			continue
		}
		if rows[ch] == nil {
			rows[ch] = map[uint64]bool{}
		}
		for _, r := range ch.AppendRows(nil, e.logical-ch.Logical, uint64(e.length)) {
			rows[ch][r] = true
		}
	}
	for ch, set := range rows {
		list := make([]uint64, 0, len(set))
		for r := range set {
			list = append(list, r)
		}
		sort.Slice(list, func(i, j int) bool { return list[i] < list[j] })
		for len(list) > 0 {
			if c.opt.cancelled() != nil {
				return
			}
			n := min(len(list), 1024) // a cancel is seen between batches
			bad, err := c.vol.CheckParityRows(ch, list[:n], nil)
			if err != nil {
				c.add(Problem{Code: ParityBad, Logical: ch.Logical, Message: fmt.Sprintf("%v chunk %d cannot be checked: %s", ch.Profile, ch.Logical, errString(err))})
				break
			}
			for _, b := range bad {
				c.rowParity(ch, b)
			}
			list = list[n:]
		}
	}
}

// rowParity reports a wrong parity strip, or a row that cannot be checked.
func (c *checker) rowParity(ch *volume.Chunk, b volume.BadParity) {
	start := ch.Logical + b.Row*ch.RowLen()
	if b.Err != nil {
		c.add(Problem{Code: ParityBad, Logical: start, Message: fmt.Sprintf("row of %v chunk %d cannot be checked: %s", ch.Profile, ch.Logical, errString(b.Err))})
		return
	}
	t := ch.ParityTarget(b.Row, b.K)
	p := Problem{Code: ParityBad, Logical: start, Copy: copyNum(b.K + 1), DevID: t.DevID, Offset: t.Physical,
		Message: fmt.Sprintf("parity strip %c of the row at %d (%v) differs from its data strips", "PQ"[b.K], start, ch.Profile)}
	if d, ok := c.vol.Device(t.DevID); ok {
		p.Device = d.Path
	}
	c.add(p)
}
