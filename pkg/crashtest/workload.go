// Package crashtest proves crash consistency by replay: it runs a random
// workload on recording devices, then rebuilds the devices as a crash
// would have left them at every flush, at every write, and with unflushed
// writes reordered and torn, and checks that each state opens, passes
// fsck, and holds exactly the tree of one committed generation. It also
// injects I/O faults and checks the same of what is left.
package crashtest

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/transfer"
)

// names the workload picks paths from: few enough that operations
// collide (overwrite, rename onto, link to existing names).
var names = []string{"/a", "/b", "/d", "/d/c", "/d/e", "/d/f/g", "/d/f", "/x y", "/ü"}

// Operation kinds of step, indexes of mayFail.
const (
	opMkdir = iota
	opWrite
	opTruncate
	opRemove
	opRename
	opLink
	opSymlink
	opXattr
	opTarIn
	opCopy
	numOps
)

// mayFail lists, per operation kind, the precondition errors it may
// return (they leave no trace); any other error fails the workload. Every
// kind resolves paths, which can fail with ENOENT, ENOTDIR or ELOOP.
var mayFail = [numOps][]syscall.Errno{
	opMkdir:    {syscall.EEXIST},
	opWrite:    {},
	opTruncate: {},
	opRemove:   {syscall.ENOTEMPTY},
	opRename:   {syscall.EINVAL, syscall.EISDIR, syscall.ENOTDIR, syscall.ENOTEMPTY},
	opLink:     {syscall.EEXIST, syscall.EPERM},
	opSymlink:  {syscall.EEXIST},
	opXattr:    {syscall.ENODATA},
	opTarIn:    {syscall.EEXIST},
	opCopy:     {syscall.EEXIST, syscall.EISDIR, syscall.EINVAL}, // EINVAL: onto itself
}

// step runs one random operation and tells whether it succeeded. A
// precondition failure the operation may return (mayFail) is not an
// error: it changed nothing.
func step(f *fsys.FS, r *rand.Rand, i int) (bool, error) {
	kind, err := runStep(f, r, i)
	if err == nil {
		return true, nil
	}
	for _, e := range append([]syscall.Errno{syscall.ENOENT, syscall.ENOTDIR, syscall.ELOOP}, mayFail[kind]...) {
		if errors.Is(err, e) {
			return false, nil
		}
	}
	return false, err
}

// runStep runs one random operation and returns its kind.
func runStep(f *fsys.FS, r *rand.Rand, i int) (int, error) {
	p := names[r.IntN(len(names))]
	q := names[r.IntN(len(names))]
	var err error
	kind := opMkdir
	switch r.IntN(12) {
	case 0:
		_, err = f.Mkdir(p, fsys.Attr{Mode: 0o755})
	case 1, 2, 3:
		kind = opWrite
		in, rerr := f.Resolve(p, false)
		if rerr != nil {
			in, err = f.Create(p, fsys.Attr{Mode: 0o644, UID: uint32(r.IntN(3))})
		} else if !in.IsRegular() {
			return kind, nil
		}
		if err == nil {
			size := []int{1, 100, 3000, 5000, 70000, 300000}[r.IntN(6)]
			data := bytes.Repeat([]byte{byte(i), byte(i >> 8)}, size/2+1)[:size]
			err = f.WriteAt(in, data, uint64(r.IntN(3)*r.IntN(40000)))
		}
	case 4:
		kind = opTruncate
		if in, rerr := f.Resolve(p, false); rerr == nil && in.IsRegular() {
			err = f.Truncate(in, uint64(r.IntN(50000)))
		}
	case 5:
		kind, err = opRemove, f.Remove(p)
	case 6:
		kind, err = opRename, f.Rename(p, q)
	case 7:
		kind, err = opLink, f.Link(p, q)
	case 8:
		kind = opSymlink
		_, err = f.Symlink(strings.TrimPrefix(q, "/"), p, fsys.Attr{})
	case 9:
		kind = opXattr
		if in, rerr := f.Resolve(p, false); rerr == nil {
			if r.IntN(3) == 0 {
				err = f.RemoveXattr(in, "user.k")
			} else {
				err = f.SetXattr(in, "user.k", []byte(fmt.Sprint("v", i)))
			}
		}
	case 10:
		kind, err = opTarIn, transfer.TarIn(f, smallTar(i), "/", transfer.Options{})
	case 11:
		kind = opCopy
		if in, rerr := f.Resolve(p, false); rerr == nil && in.IsRegular() {
			err = transfer.CopyWithin(f, p, q, transfer.Options{})
		}
	}
	return kind, err
}

// smallTar is an archive of a directory with two files and a hard link.
func smallTar(i int) io.Reader {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	mod := time.Unix(1700000000, 0)
	tw.WriteHeader(&tar.Header{Name: "t/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mod})
	body := bytes.Repeat([]byte{byte(i)}, 9000)
	tw.WriteHeader(&tar.Header{Name: "t/one", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body)), ModTime: mod, PAXRecords: map[string]string{"SCHILY.xattr.user.t": "x"}})
	tw.Write(body)
	tw.WriteHeader(&tar.Header{Name: "t/two", Typeflag: tar.TypeLink, Linkname: "t/one", ModTime: mod})
	tw.Close()
	return &b
}

// treeState renders the whole tree: names, types, modes, owners, link
// counts, sizes, content hashes, symlink targets and xattrs.
func treeState(f *fsys.FS) (string, error) {
	var lines []string
	var walk func(p string, in *fsys.Inode) error
	walk = func(p string, in *fsys.Inode) error {
		ents, err := f.List(in)
		if err != nil {
			return err
		}
		for _, e := range ents {
			c, err := f.Inode(e.Ino)
			if err != nil {
				return err
			}
			cp := p + "/" + e.Name
			line := fmt.Sprintf("%s %o %d:%d n%d s%d", cp, c.Mode, c.UID, c.GID, c.Nlink, c.Size)
			switch {
			case c.IsRegular():
				b := make([]byte, c.Size)
				if _, err := f.ReadAt(c, b, 0); err != nil && err != io.EOF {
					return fmt.Errorf("%s: %w", cp, err)
				}
				line += fmt.Sprintf(" %x", sha256.Sum256(b))
			case c.IsSymlink():
				t, err := f.Readlink(cp)
				if err != nil {
					return err
				}
				line += " -> " + t
			}
			xs, err := f.ListXattrs(c)
			if err != nil {
				return err
			}
			for _, x := range xs {
				line += fmt.Sprintf(" %s=%q", x.Name, x.Value)
			}
			lines = append(lines, line)
			if c.IsDir() {
				if err := walk(cp, c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	root, err := f.Resolve("/", false)
	if err != nil {
		return "", err
	}
	if err := walk("", root); err != nil {
		return "", err
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n"), nil
}
