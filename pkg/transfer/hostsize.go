package transfer

import (
	"io/fs"
	"os"
	"path/filepath"
)

// HostBytes sums the sizes of the regular files under the host paths (a
// progress bar's total; symlinks followed only with follow, as the copy
// does). It stops early at limit files so a huge tree costs a bounded
// walk; ok is false then, or when a path cannot be read.
func HostBytes(paths []string, follow bool, limit int) (total uint64, ok bool) {
	files := 0
	ok = true
	for _, p := range paths {
		err := filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if files++; files > limit {
				return fs.SkipAll
			}
			info, err := d.Info()
			if follow && d.Type()&fs.ModeSymlink != 0 {
				info, err = os.Stat(q)
			}
			if err == nil && info.Mode().IsRegular() {
				total += uint64(info.Size())
			}
			return nil
		})
		if err != nil || files > limit {
			return total, false
		}
	}
	return total, true
}
