package store

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// SetLabel changes the filesystem label in a transaction of its own (as
// btrfs filesystem label / e2label): every superblock copy of every device
// gets it with the commit.
func (fs *FS) SetLabel(label string) error {
	if len(label) >= format.LabelSize {
		return fmt.Errorf("label is %d bytes, at most %d", len(label), format.LabelSize-1)
	}
	return fs.commitFSID(func(sb *format.Superblock) { sb.Label = label })
}
