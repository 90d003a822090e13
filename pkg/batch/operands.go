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
	"strings"

	"github.com/google/uuid"

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
	// (0 when unknown): memory estimates and progress totals.
	Used, Total uint64
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
// without locking), in the order of each set's first operand. An operand
// named twice counts once.
func Group(operands []string) []*Set {
	var sets []*Set
	byKey := map[string]*Set{}
	seen := map[string]bool{}
	for _, p := range operands {
		if seen[p] {
			continue
		}
		seen[p] = true
		s := &Set{Paths: []string{p}}
		if sb, err := volume.PeekSuper(p); err == nil {
			s.UUID, s.Used, s.Total = uuid.UUID(sb.FSID).String(), sb.BytesUsed, sb.TotalBytes
		}
		if have, ok := byKey[s.key()]; ok {
			have.Paths = append(have.Paths, p)
			continue
		}
		byKey[s.key()] = s
		sets = append(sets, s)
	}
	return sets
}
