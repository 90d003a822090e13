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
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/transfer"
)

// names the workload picks paths from: few enough that operations
// collide (overwrite, rename onto, link to existing names).
var names = []string{"/a", "/b", "/d", "/d/c", "/d/e", "/d/f/g", "/d/f", "/x y", "/ü"}

// step runs one random operation. Precondition failures (ENOENT, EEXIST,
// ...) leave no trace, so the workload simply ignores them; any other
// error is returned.
func step(f *fsys.FS, r *rand.Rand, i int) error {
	p := names[r.IntN(len(names))]
	q := names[r.IntN(len(names))]
	var err error
	switch r.IntN(12) {
	case 0:
		_, err = f.Mkdir(p, fsys.Attr{Mode: 0o755})
	case 1, 2, 3:
		in, rerr := f.Resolve(p, false)
		if rerr != nil {
			in, err = f.Create(p, fsys.Attr{Mode: 0o644, UID: uint32(r.IntN(3))})
		} else if !in.IsRegular() {
			return nil
		}
		if err == nil {
			size := []int{1, 100, 3000, 5000, 70000, 300000}[r.IntN(6)]
			data := bytes.Repeat([]byte{byte(i), byte(i >> 8)}, size/2+1)[:size]
			err = f.WriteAt(in, data, uint64(r.IntN(3)*r.IntN(40000)))
		}
	case 4:
		if in, rerr := f.Resolve(p, false); rerr == nil && in.IsRegular() {
			err = f.Truncate(in, uint64(r.IntN(50000)))
		}
	case 5:
		err = f.Remove(p)
	case 6:
		err = f.Rename(p, q)
	case 7:
		err = f.Link(p, q)
	case 8:
		_, err = f.Symlink(strings.TrimPrefix(q, "/"), p, fsys.Attr{})
	case 9:
		if in, rerr := f.Resolve(p, false); rerr == nil {
			if r.IntN(3) == 0 {
				err = f.RemoveXattr(in, "user.k")
			} else {
				err = f.SetXattr(in, "user.k", []byte(fmt.Sprint("v", i)))
			}
		}
	case 10:
		err = transfer.TarIn(f, smallTar(i), "/", transfer.Options{})
	case 11:
		if in, rerr := f.Resolve(p, false); rerr == nil && in.IsRegular() {
			err = transfer.CopyWithin(f, p, q, transfer.Options{})
		}
	}
	if err != nil && isPrecondition(err) {
		return nil
	}
	return err
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
