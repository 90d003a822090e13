package check

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ddfs/ddfs/format"
)

// checkLogSpace: the replay claims a log's new data extents, so they must
// lie in data chunks where no committed data extent is (FORMAT.md
// §3.10); the replay refuses a log that says otherwise, and so does fsck.
func (c *checker) checkLogSpace() {
	if len(c.logNew) == 0 {
		return
	}
	news := slices.Clone(c.logNew)
	slices.SortFunc(news, func(a, b format.LogData) int { return cmp.Compare(a.Logical, b.Logical) })
	for _, d := range news {
		ch, ok := c.vol.Chunks.Lookup(d.Logical)
		if !ok || ch.Type != format.ChunkData || d.Logical+d.DiskLen > ch.End() {
			c.add(Problem{Code: LogBad, Logical: d.Logical, Message: fmt.Sprintf("fsync log: new data %d+%d is not in a data chunk", d.Logical, d.DiskLen)})
		}
	}
	// One pass over the committed extents (in key order, or not: each
	// is looked up among the sorted new ones).
	for _, e := range c.fs.extents.list {
		i, _ := slices.BinarySearchFunc(news, e.end(), func(d format.LogData, end uint64) int {
			if d.Logical < end {
				return -1
			}
			return 1
		})
		// news[i-1] is the last starting before e ends; earlier ones may
		// be long, so look back while they could reach e.
		for j := i - 1; j >= 0 && news[j].Logical+format.MaxExtentBytes > e.logical; j-- {
			if news[j].Logical+news[j].DiskLen > e.logical {
				c.add(Problem{Code: LogBad, Logical: news[j].Logical, Message: fmt.Sprintf("fsync log: new data %d+%d overlaps the data extent %d+%d", news[j].Logical, news[j].DiskLen, e.logical, e.length)})
			}
		}
	}
}
