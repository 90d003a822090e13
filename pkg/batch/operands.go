// Package batch runs a tool over many filesystems at once (fsck.ddfs,
// trimtool, dedupe-tool status, ddfs info and df): operands from the
// command line and --from, grouped into sets by filesystem UUID, a share
// of them by --shard, run -j at a time within a memory budget, their
// reports printed whole and in operand order, and SIGINT/SIGTERM stopping
// the run at a safe point.
package batch

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/google/uuid"

	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/volume"
)

// Set is one filesystem named by the operands.
type Set struct {
	// Paths are the operands that belong to it, in operand order; the
	// members not named are found when it is opened, as for one set.
	Paths []string
	// UUID is the filesystem's ("" when Paths[0] holds no readable
	// ddfs superblock: the job then reports why it cannot open it).
	UUID string
	// Used and Total are the superblock's bytes_used and total_bytes
	// (0 when unknown): progress totals.
	Used, Total uint64
	// Memory is the job's estimate beyond its base (MemEstimate).
	Memory uint64
}

// Path is the set's first operand: it names the set in every report.
func (s *Set) Path() string { return s.Paths[0] }

// key is what --shard hashes: the UUID, or the path of an operand that
// has none (each such operand is a set of its own).
func (s *Set) key() string {
	if s.UUID != "" {
		return s.UUID
	}
	return "path:" + s.Paths[0]
}

// maxLine bounds one line of a --from list.
const maxLine = 64 << 10

// ReadList reads a --from list: one path per line, blank lines skipped
// (a path is taken as it is, spaces included; a trailing CR is dropped).
func ReadList(r io.Reader, name string) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxLine)
	var out []string
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s: a line is longer than %d bytes", name, maxLine)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// Operands are the command-line operands followed by those of --from
// (from "-": stdin).
func Operands(args []string, from string, stdin io.Reader) ([]string, error) {
	if from == "" {
		return args, nil
	}
	r, name := stdin, "stdin"
	if from != "-" {
		f, err := os.Open(from)
		if err != nil {
			return nil, fmt.Errorf("--from: %w", err)
		}
		defer f.Close()
		r, name = f, from
	}
	list, err := ReadList(r, name)
	if err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	return append(append([]string{}, args...), list...), nil
}

// Group sorts operands into sets by the UUID of their superblock (read
// without locking), in the order of each set's first operand. Two paths
// to one file (./a.img, a hard link, a symlink) are one operand. A device
// a set already has starts a set of its own with the same UUID: a copy
// of an image (cp a.img b.img) is another filesystem to check, and
// naming both to one open would refuse both as ambiguous.
func Group(operands []string) []*Set {
	var sets []*Set
	byUUID := map[string][]*Set{} // the sets of one UUID: copies
	devids := map[*Set]map[uint64]bool{}
	seen := map[any]bool{}
	for _, p := range operands {
		id := fileID(p)
		if seen[id] {
			continue
		}
		seen[id] = true
		s := &Set{Paths: []string{p}}
		sb, err := volume.PeekSuper(p)
		if err != nil {
			sets = append(sets, s)
			continue
		}
		s.UUID, s.Used, s.Total = uuid.UUID(sb.FSID).String(), sb.BytesUsed, sb.TotalBytes
		s.Memory = MemEstimate(sb)
		if have := setWithout(byUUID[s.UUID], devids, sb.DevID); have != nil {
			have.Paths = append(have.Paths, p)
			devids[have][sb.DevID] = true
			continue
		}
		byUUID[s.UUID] = append(byUUID[s.UUID], s)
		devids[s] = map[uint64]bool{sb.DevID: true}
		sets = append(sets, s)
	}
	return sets
}

// setWithout is the first of sets that has no device devid yet.
func setWithout(sets []*Set, devids map[*Set]map[uint64]bool, devid uint64) *Set {
	for _, s := range sets {
		if !devids[s][devid] {
			return s
		}
	}
	return nil
}

// fileID is what makes two operands one: the file's device and inode
// (after symlinks), a block device's number (two nodes of one disk), or
// the cleaned path of one that cannot be stat'ed.
func fileID(p string) any {
	if st, err := os.Stat(p); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			if device.IsBlockMode(st.Mode()) {
				return [3]uint64{0, 0, uint64(sys.Rdev)}
			}
			return [2]uint64{uint64(sys.Dev), sys.Ino}
		}
	}
	return filepath.Clean(p)
}
