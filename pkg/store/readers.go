package store

// Readers beside this writer (volume.Options.Beside): a reader reads the
// commit it opened at, and marks its generation. Space a commit frees is
// still referenced by every older commit, so it becomes allocatable (and
// discardable) only once no reader of an older generation remains: until
// then it waits in fs.readerHold, in commit order.

import (
	"fmt"
	"time"

	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/device"
)

// freedAt is the space commit gen freed.
type freedAt struct {
	gen    uint64
	ranges []alloc.Range
}

// releaseFreed takes the space commit gen freed and makes free what no
// reader beside may still read; it returns what it made free. A failed
// ask keeps everything held: "in use" wins.
func (fs *FS) releaseFreed(gen uint64, freed []alloc.Range) ([]alloc.Range, error) {
	if len(freed) > 0 {
		fs.readerHold = append(fs.readerHold, freedAt{gen, freed})
	}
	if len(fs.readerHold) == 0 {
		return nil, nil
	}
	oldest, _, any, err := fs.Vol.OldestReader()
	if err != nil {
		return nil, nil
	}
	var out []alloc.Range
	n := 0
	for _, h := range fs.readerHold {
		if any && h.gen > oldest {
			break // this commit and later ones freed what that reader may read
		}
		for _, r := range h.ranges {
			if bg := fs.blockGroup(r.Start); bg != nil && bg.free != nil {
				if err := bg.free.Add(r.Start, r.Len); err != nil {
					fs.broken = true
					return out, fmt.Errorf("unpin [%d,+%d): %v: %w", r.Start, r.Len, err, ErrCorrupt)
				}
			}
		}
		out = append(out, h.ranges...)
		n++
	}
	fs.readerHold = fs.readerHold[n:]
	return out, nil
}

// HeldForReaders is the space commits freed that readers beside this
// writer may still read.
func (fs *FS) HeldForReaders() (n uint64) {
	for _, h := range fs.readerHold {
		for _, r := range h.ranges {
			n += r.Len
		}
	}
	return n
}

// refuseOlderReaders fails a writer's open while a reader beside an
// earlier writer reads a generation older than the last commit: what the
// commits since then freed is free on disk, and this writer could not
// tell it from space no one reads. With wait it waits for them instead.
func (fs *FS) refuseOlderReaders(wait bool) error {
	for {
		gen, pid, ok, err := fs.Vol.OldestReader()
		if err != nil || !ok || gen >= fs.sb.Generation {
			return err
		}
		if !wait {
			why := fmt.Sprintf("read at generation %d, before the last commit %d", gen, fs.sb.Generation)
			return &device.BusyError{Path: fs.Vol.Devices()[0].Path, PID: pid, Why: why}
		}
		time.Sleep(50 * time.Millisecond)
	}
}
