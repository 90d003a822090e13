package volume

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/google/uuid"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// Sentinels of set discovery and the member cross-check (FORMAT.md §3.7).
var (
	// ErrAmbiguousDevice: two distinct files claim the same device of a set.
	ErrAmbiguousDevice = errors.New("ambiguous device")
	// ErrDivergedDevice: a member's superblock is no state of this set's history.
	ErrDivergedDevice = errors.New("device of a diverged copy of the set")
	// ErrSuperMismatch: superblock copies of the set's generation differ in
	// set-wide fields; readers go on with the set superblock, writers refuse.
	ErrSuperMismatch = errors.New("superblock copies of one generation differ")
)

// AmbiguousError names the files that claim one device of a set.
type AmbiguousError struct {
	FSID  [16]byte
	DevID uint64
	Paths []string
}

func (e *AmbiguousError) Error() string {
	who := strings.Join(e.Paths, " and ") + " both"
	if len(e.Paths) > 2 {
		who = strings.Join(e.Paths, ", ") + " all"
	}
	return fmt.Sprintf("%s claim to be device %d of filesystem %s: name the devices to use with --device PATH, move the copy away, or give a copied set its own identity with ddfs set-uuid",
		who, e.DevID, uuid.UUID(e.FSID))
}

// Unwrap makes errors.Is(err, ErrAmbiguousDevice) hold.
func (e *AmbiguousError) Unwrap() error { return ErrAmbiguousDevice }

// DivergedError is a member whose superblock is neither the set's
// generation nor a generation the set's backup roots remember identically.
type DivergedError struct {
	Path          string
	DevID         uint64
	Generation    uint64
	SetGeneration uint64
	SetFrom       string // the device the set superblock was read from
}

func (e *DivergedError) Error() string {
	if e.Generation < e.SetGeneration {
		// Most often a member back after the set went on degraded for
		// more commits than its backup roots remember.
		return fmt.Sprintf("%s: device %d is at generation %d, older than the set at generation %d (%s) and than the generations the set remembers: it was away while the set went on (or is a diverged copy); move it away, open the set with --degraded and replace the device (ddfs device replace --degraded)",
			e.Path, e.DevID, e.Generation, e.SetGeneration, e.SetFrom)
	}
	return fmt.Sprintf("%s: device %d is at generation %d, which is not in the history of the set at generation %d (%s): it belongs to a diverged copy of the set; name the devices to use with --device PATH",
		e.Path, e.DevID, e.Generation, e.SetGeneration, e.SetFrom)
}

// Unwrap makes errors.Is(err, ErrDivergedDevice) hold.
func (e *DivergedError) Unwrap() error { return ErrDivergedDevice }

// MissingName names a device that was not found, with its path hint.
func MissingName(devid uint64, hint string) string {
	if hint == "" {
		return fmt.Sprintf("device %d", devid)
	}
	return fmt.Sprintf("device %d (%s)", devid, hint)
}

// Refused reports whether err says a device was found but must not be
// used (ambiguous, diverged, inconsistent or busy): not "not found".
func Refused(err error) bool {
	return errors.Is(err, ErrAmbiguousDevice) || errors.Is(err, ErrDivergedDevice) ||
		errors.Is(err, ErrSuperMismatch) || errors.Is(err, device.ErrBusy)
}

// SuperFinding is a superblock copy whose generation is the set's but
// whose set-wide fields differ from the set superblock (corruption).
type SuperFinding struct {
	DevID  uint64
	Path   string
	Offset uint64
}

// SameSet reports whether superblock b belongs to the set of a: equal
// fsids, or either fsid being the other's pending new fsid (§3.8).
func SameSet(a, b *format.Superblock) bool {
	var zero [16]byte
	return a.FSID == b.FSID || (a.NewFSID != zero && b.FSID == a.NewFSID) || (b.NewFSID != zero && a.FSID == b.NewFSID)
}

// SameSetFields reports whether a and b agree on every set-wide field
// (all but dev_uuid, devid, bytenr and the checksum, FORMAT.md §3.7).
func SameSetFields(a, b *format.Superblock) bool {
	x, y := format.WithoutLog(*a), format.WithoutLog(*b)
	x.DevID, x.DevUUID, x.Bytenr = 1, [16]byte{}, 0
	y.DevID, y.DevUUID, y.Bytenr = 1, [16]byte{}, 0
	bx, err1 := format.MarshalSuperblock(&x)
	by, err2 := format.MarshalSuperblock(&y)
	return err1 == nil && err2 == nil && bytes.Equal(bx, by)
}

// settle chooses the set superblock, refuses diverged members and records
// the same-generation copies that differ (§3.7 steps 4 and 5).
func (v *Volume) settle() error {
	devs := v.Devices() // by devid: the lowest devid wins a tie
	var from *Dev
	for _, d := range devs {
		if from == nil || format.NewerSuper(d.Super, from.Super) {
			from = d
		}
	}
	if from == nil {
		return errors.New("no device given")
	}
	v.Super, v.superFrom = from.Super, from.Path
	v.findings = nil
	for _, d := range devs {
		if err := v.verifyMember(d); err != nil {
			return err
		}
	}
	return nil
}

// verifyMember checks device d against the set superblock.
func (v *Volume) verifyMember(d *Dev) error {
	set := v.Super
	if !SameSet(set, d.Super) {
		return fmt.Errorf("%s: belongs to another filesystem (%s, not %s)", d.Path, uuid.UUID(d.Super.FSID), uuid.UUID(set.FSID))
	}
	if d.Super.Generation != set.Generation && !inHistory(set, d.Super) {
		return &DivergedError{Path: d.Path, DevID: d.ID, Generation: d.Super.Generation, SetGeneration: set.Generation, SetFrom: v.superFrom}
	}
	for _, c := range d.Copies {
		if c.SB != nil && c.SB.Generation == set.Generation && !SameSetFields(c.SB, set) {
			v.findings = append(v.findings, SuperFinding{DevID: d.ID, Path: d.Path, Offset: c.Offset})
		}
	}
	if len(v.findings) > 0 && v.writable {
		f := v.findings[0]
		return fmt.Errorf("%s: superblock at %d differs from the set's superblock of generation %d (run fsck.ddfs): %w", f.Path, f.Offset, set.Generation, ErrSuperMismatch)
	}
	return nil
}

// inHistory: an older member is the trace of a crash between superblock
// writes only if the set remembers its root set exactly (§3.7).
func inHistory(set, old *format.Superblock) bool {
	if old.Generation > set.Generation {
		return false
	}
	for _, b := range set.Backups {
		if b.Generation == old.Generation && b == old.Roots {
			return true
		}
	}
	return false
}

// Findings returns the superblock copies that have the set's generation
// but differ from it (fsck reports them; writers refuse such a set).
func (v *Volume) Findings() []SuperFinding { return v.findings }

// scanDir collects every regular file of dir whose primary superblock
// belongs to the set, refuses ambiguity, then opens the candidates.
func (v *Volume) scanDir(dir string, set *format.Superblock, opt Options) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("look for the other devices: %w", err)
	}
	claims := map[uint64][]string{}
	opened := v.fileInfos()
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if isOneOf(p, opened) {
			continue
		}
		sb, err := PeekSuper(p)
		if sb != nil && SameSet(set, sb) {
			claims[sb.DevID] = append(claims[sb.DevID], p)
		} else if err != nil && !errors.Is(err, ErrNoSuperblock) && len(v.unread) < maxUnread {
			v.unread = append(v.unread, fmt.Sprintf("%s: %v", p, Cause(err)))
		}
	}
	ids := make([]uint64, 0, len(claims))
	for id := range claims {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		paths := claims[id]
		if d, given := v.devs[id]; given {
			paths = append([]string{d.Path}, paths...)
		}
		if len(paths) > 1 {
			return &AmbiguousError{FSID: set.FSID, DevID: id, Paths: paths}
		}
	}
	for _, id := range ids {
		d, err := openDev(claims[id][0], opt.devOpts())
		if err != nil {
			if Refused(err) {
				return err
			}
			v.setUnusable(id, err) // a member, but one we cannot open (EACCES)
			continue
		}
		if d.ID != id || !SameSet(set, d.Super) {
			d.Dev.Close()
			return fmt.Errorf("%s: changed while the set was being opened", d.Path)
		}
		if err := v.add(d); err != nil {
			return err
		}
	}
	return nil
}

// maxUnread bounds the unreadable files a scan remembers.
const maxUnread = 4

// Cause is err without a *fs.PathError around it: messages that name
// the file themselves say it once.
func Cause(err error) error {
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Unread lists the files of the folder scan that could not be read
// ("PATH: reason"): any of them may be a member reported missing.
func (v *Volume) Unread() []string { return v.unread }

// hasFile reports whether p is (a path of) an opened device.
func (v *Volume) hasFile(p string) bool { return isOneOf(p, v.fileInfos()) }

// fileInfos maps the paths of the opened devices to their file info (nil
// for a device that is no plain path, e.g. a partition spec).
func (v *Volume) fileInfos() map[string]os.FileInfo {
	out := map[string]os.FileInfo{}
	for _, d := range v.devs {
		st, _ := os.Stat(d.Path)
		out[filepath.Clean(d.Path)] = st
	}
	return out
}

// isOneOf reports whether p names one of the files, by path or identity.
func isOneOf(p string, files map[string]os.FileInfo) bool {
	if _, ok := files[filepath.Clean(p)]; ok {
		return true
	}
	st, err := os.Stat(p)
	if err != nil {
		return false
	}
	for _, f := range files {
		if f != nil && os.SameFile(st, f) {
			return true
		}
	}
	return false
}

// CheckOwnHint refuses device devid when its recorded path hint names
// another existing file that claims the same device of the same set: the
// opened file is then one of two copies (a device copied to another
// folder), and hints of the other members would lead a writer into the
// original set (FORMAT.md §3.7). Call it once every member is open.
func (v *Volume) CheckOwnHint(devid uint64, hint string) error {
	d, ok := v.devs[devid]
	if !ok {
		return nil
	}
	self := map[string]os.FileInfo{filepath.Clean(d.Path): statOrNil(d.Path)}
	for _, p := range v.hintCandidates(hint) {
		if isOneOf(p, self) {
			continue
		}
		sb := peekSuper(p)
		if sb == nil || !SameSet(sb, v.Super) || sb.DevID != devid {
			continue // moved or reused since: a stale hint is no claim
		}
		return &AmbiguousError{FSID: v.Super.FSID, DevID: devid, Paths: []string{d.Path, p}}
	}
	return nil
}

// hintCandidates are the files a member's own hint may name: resolved as
// HintPath does and, a relative hint, against each open member's folder
// too. A relative hint is relative to the folder of the device first
// named when it was recorded, not necessarily the folder this open began
// in: a copy of the whole tree opened from a member in a subfolder finds
// the original member next to the original device its hints led to.
func (v *Volume) hintCandidates(hint string) []string {
	p, follow := v.HintPath(hint)
	if !follow {
		return nil
	}
	out := []string{p}
	if !filepath.IsAbs(hint) {
		for _, m := range v.Devices() {
			if dir := folderOf(m.Path); dir != "" {
				out = append(out, filepath.Join(dir, hint))
			}
		}
	}
	return out
}

func statOrNil(p string) os.FileInfo {
	st, _ := os.Stat(p)
	return st
}

// peekSuper returns the newest valid superblock copy of file p, nil if it
// has none; a copy whose primary is damaged still claims its device. It
// reads without locking, before anything is opened.
func peekSuper(p string) *format.Superblock {
	sb, _ := PeekSuper(p)
	return sb
}

// PeekSuper reads the newest valid superblock copy of p (a file or a
// block device) without locking it: batch tools group their operands by
// filesystem before opening any. An error that is not ErrNoSuperblock
// means p could not be read. Anything but a regular file or a block
// device holds no ddfs superblock: a FIFO or a terminal among the
// operands would block the read forever.
func PeekSuper(p string) (*format.Superblock, error) {
	// O_NONBLOCK: opening a FIFO for reading waits for a writer; for a
	// regular file or a block device it changes nothing.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if m := st.Mode(); !m.IsRegular() && !device.IsBlockMode(m) {
		return nil, fmt.Errorf("%s: not a regular file or block device (mode %v): %w", p, m, ErrNoSuperblock)
	}
	// Seek, not Stat: a block device's Stat size is 0.
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return BestSuper(readSuperCopies(f, size))
}
