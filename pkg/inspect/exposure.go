package inspect

import (
	"fmt"
	"io"

	"github.com/ddfs/ddfs/pkg/units"
	"github.com/ddfs/ddfs/pkg/volume"
)

// PrintExposure says, one line per device, what losing it would cost
// (fsck and scrub print it alike).
func PrintExposure(w io.Writer, prefix string, ex []volume.Exposure) {
	for _, e := range ex {
		fmt.Fprintf(w, "%slosing devid %d %s would lose %d chunks (%s, %s in use) that the set's profiles mean to survive it\n",
			prefix, e.DevID, e.Path, e.Chunks, units.Human(e.Size), units.Human(e.Used))
	}
}
