package export

// FAT32 (EFI system partitions, firmware media): go-diskfs's fat32 writer
// takes files one by one, with no workspace. FAT keeps long names
// (case-insensitive), directories, regular files under 4 GiB, their bytes
// and a modification time to 2 s; no symlinks, device nodes, owners or
// modes. A tree holding anything FAT cannot keep is refused, naming the
// path, before OUT is made: an export never drops part of a tree.

import (
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"syscall"
	"time"
	"unicode/utf16"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/fat32"

	"github.com/ddfs/ddfs/pkg/fsys"
)

const (
	fatMaxFile = 1<<32 - 1 // a FAT directory entry's size field
	fatMinSize = 64 << 20  // FAT32 wants 65,525 clusters at least
	fatEntry   = 4096      // what an entry costs at most besides its data, in estimates
)

// fatPlan walks the tree at src, refusing what FAT cannot keep, and
// returns the image size it needs (data rounded up to 4 KiB clusters,
// directories, then a tenth more and the FATs' own room).
func fatPlan(f *fsys.FS, src string, root *fsys.Inode) (int64, error) {
	var need uint64
	var walk func(p string, dir *fsys.Inode, depth int) error
	walk = func(p string, dir *fsys.Inode, depth int) error {
		if depth > 1024 {
			return fmt.Errorf("%s: nested over 1024 deep: %w", p, syscall.ELOOP)
		}
		kids, err := f.Children(dir)
		if err != nil {
			return err
		}
		seen := map[string]string{}
		shorts := newFATShorts()
		for _, k := range kids { // in fatFill's order: the 8.3 names depend on it
			name, in := k.Entry.Name, k.Inode
			q := path.Join(p, name)
			if err := fatName(name); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
			if other, ok := seen[strings.ToUpper(name)]; ok {
				return fmt.Errorf("%s: FAT names ignore case and %q is there too: %w", q, other, syscall.EEXIST)
			}
			seen[strings.ToUpper(name)] = name
			if short, other := shorts.add(name); other != "" {
				return fmt.Errorf("%s: its FAT 8.3 name %s is %q's too (go-diskfs v1.9.4 would write one over the other): %w", q, short, other, syscall.EEXIST)
			}
			need += fatEntry
			switch {
			case in.IsDir():
				if err := walk(q, in, depth+1); err != nil {
					return err
				}
			case in.IsRegular():
				if in.Size > fatMaxFile {
					return fmt.Errorf("%s: %d bytes, over FAT's 4 GiB a file: %w", q, in.Size, syscall.EFBIG)
				}
				need += (in.Size + 4095) &^ 4095
			default:
				return fmt.Errorf("%s: FAT holds only directories and regular files, not a %s: %w", q, kind(in), syscall.EOPNOTSUPP)
			}
		}
		return nil
	}
	if err := walk(src, root, 0); err != nil {
		return 0, err
	}
	size := need + need/10 + 16<<20
	return int64(max(size, fatMinSize)+(1<<20)-1) &^ (1<<20 - 1), nil
}

// fatName refuses a name FAT's long names cannot hold.
func fatName(name string) error {
	if len(utf16.Encode([]rune(name))) > 255 {
		return fmt.Errorf("over 255 UTF-16 units, FAT's longest name: %w", syscall.ENAMETOOLONG)
	}
	if strings.HasSuffix(name, ".") || strings.HasSuffix(name, " ") {
		return fmt.Errorf("FAT drops a name's trailing dots and spaces: %w", syscall.EINVAL)
	}
	for _, r := range name {
		if r < 0x20 || strings.ContainsRune(`"*/:<>?\|`, r) || r == 0xFFFD {
			return fmt.Errorf("FAT names cannot hold %q: %w", r, syscall.EINVAL)
		}
	}
	return nil
}

// kind names an inode's type for a refusal.
func kind(in *fsys.Inode) string {
	switch in.Mode & syscall.S_IFMT {
	case syscall.S_IFLNK:
		return "symlink"
	case syscall.S_IFCHR, syscall.S_IFBLK:
		return "device node"
	case syscall.S_IFIFO:
		return "fifo"
	case syscall.S_IFSOCK:
		return "socket"
	}
	return fmt.Sprintf("file of type %o", in.Mode&syscall.S_IFMT)
}

// exportFAT writes the tree at src into a new FAT32 filesystem on w, of
// size bytes (0: what fatPlan says it needs).
func exportFAT(f *fsys.FS, src string, w *os.File, o Options) error {
	root, err := f.Resolve(src, true)
	if err != nil {
		return err
	}
	if !root.IsDir() {
		return &os.PathError{Op: "export", Path: src, Err: syscall.ENOTDIR}
	}
	need, err := fatPlan(f, src, root)
	if err != nil {
		return err
	}
	size := o.Size
	if size == 0 {
		size = need
	}
	if size < need {
		return fmt.Errorf("--size %d: the tree needs about %d bytes of FAT32: %w", size, need, syscall.ENOSPC)
	}
	if err := w.Truncate(size); err != nil {
		return err
	}
	_, reproducible := sourceDate()
	fs, err := fat32.Create(file.New(w, false), size, 0, 512, o.Label, reproducible)
	if err != nil {
		return fmt.Errorf("fat32: %w", err)
	}
	if err := fatFill(f, fs, src, "/", root, 0); err != nil {
		return err
	}
	return fatFix(w)
}

// fatFill copies the directory dir (at p in the tree, q in the image).
func fatFill(f *fsys.FS, fs *fat32.FileSystem, p, q string, dir *fsys.Inode, depth int) error {
	kids, err := f.Children(dir)
	if err != nil {
		return err
	}
	for _, k := range kids {
		pk, qk, in := path.Join(p, k.Entry.Name), path.Join(q, k.Entry.Name), k.Inode
		if in.IsDir() {
			if err := fs.Mkdir(qk); err != nil {
				return fmt.Errorf("fat32: %s: %w", qk, err)
			}
			if err := fatFill(f, fs, pk, qk, in, depth+1); err != nil {
				return err
			}
		} else if err := fatFile(f, fs, pk, qk, in); err != nil {
			return err
		}
		mt := time.Unix(in.Mtime.Sec, int64(in.Mtime.Nsec)).UTC()
		if err := fs.Chtimes(qk, mt, mt, mt); err != nil {
			return fmt.Errorf("fat32: %s: %w", qk, err)
		}
	}
	return nil
}

// fatFile copies a regular file's bytes, 1 MiB at a time.
func fatFile(f *fsys.FS, fs *fat32.FileSystem, p, q string, in *fsys.Inode) error {
	w, err := fs.OpenFile(q, os.O_CREATE|os.O_RDWR)
	if err != nil {
		return fmt.Errorf("fat32: %s: %w", q, err)
	}
	buf := make([]byte, min(in.Size, 1<<20))
	for off := uint64(0); off < in.Size; {
		n, err := f.ReadAt(in, buf[:min(uint64(len(buf)), in.Size-off)], off)
		if n == 0 && err != nil {
			w.Close()
			return fmt.Errorf("%s: %w", p, err)
		}
		if _, err := w.Write(buf[:n]); err != nil {
			w.Close()
			return fmt.Errorf("fat32: %s: %w", q, err)
		}
		off += uint64(n)
	}
	if err := w.Close(); err != nil && err != io.EOF {
		return fmt.Errorf("fat32: %s: %w", q, err)
	}
	return nil
}

// fatShorts follows the 8.3 names go-diskfs v1.9.4 gives a directory's
// entries as they are made: upper case, dots and spaces dropped, other
// characters outside 8.3's set made "_", the extension cut to 3; a stem
// over 8 characters gets the first free "~N" tail, but any other clash is
// left in place, and then one entry opens as the other (its lookups take
// the last match of a long or short name). Such a pair is refused.
type fatShorts struct {
	names map[string]string   // "STEM.EXT" -> the long name that has it
	keys  map[string]struct{} // go-diskfs's own clash test: stem and extension run together
}

func newFATShorts() *fatShorts {
	return &fatShorts{names: map[string]string{}, keys: map[string]struct{}{}}
}

// add takes name's 8.3 name; other is the entry that has it already.
func (s *fatShorts) add(name string) (short, other string) {
	stem, ext := name, ""
	if i := strings.LastIndex(name, "."); i >= 0 {
		stem, ext = name[:i], name[i+1:]
		if len(ext) > 3 {
			ext = ext[:3]
		}
		ext = fatUpper(ext)
	}
	stem = fatUpper(stem)
	if len(stem) > 8 {
		stem = stem[:6]
		for n := 1; ; n++ {
			tail := fmt.Sprintf("~%d", n)
			c := stem[:min(len(stem), 8-len(tail))] + tail
			if _, clash := s.keys[c+ext]; !clash {
				stem = c
				break
			}
		}
	}
	short = stem + "." + ext
	if o, ok := s.names[short]; ok {
		return short, o
	}
	s.names[short], s.keys[stem+ext] = name, struct{}{}
	return short, ""
}

// fatUpper is go-diskfs's uCaseValid: each rune's low byte tested
// against 8.3's characters (as it does), a-z upper-cased, spaces and dots
// dropped, anything else "_".
func fatUpper(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch c := byte(r); {
		case strings.IndexByte(fatShortChars, c) >= 0:
			b.WriteRune(r)
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 32)
		case r == ' ' || r == '.':
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

const fatShortChars = "!#$%&'()-0123456789@ABCDEFGHIJKLMNOPQRSTUVWXYZ^_`{}~"
