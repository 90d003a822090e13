// Command fsckdamage damages N inodes of a ddfs image (their nlink, in one
// transaction) for bench/fsck.sh: the time of fsck.ddfs -y on it against
// a clean check.
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: fsckdamage IMAGE N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err == nil {
		err = damage(os.Args[1], n)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fsckdamage:", err)
		os.Exit(1)
	}
}

// damage bumps the link count of the first n regular files.
func damage(image string, n int) error {
	fs, err := store.Open([]string{image}, volume.Options{Write: true})
	if err != nil {
		return err
	}
	defer fs.Close()
	var keys []format.Key
	err = fs.Tree(format.FSTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		if it.Key.Type == format.InodeItemKey {
			if in, err := format.UnmarshalInodeItem(it.Data); err == nil && in.FileType() == format.FileTypeRegular {
				keys = append(keys, it.Key)
			}
		}
		return len(keys) < n, nil
	})
	if err != nil {
		return err
	}
	tx, err := fs.Begin()
	if err != nil {
		return err
	}
	for _, k := range keys {
		b, err := tx.Tree(format.FSTree).Get(k)
		if err != nil {
			return err
		}
		in, err := format.UnmarshalInodeItem(b)
		if err != nil {
			return err
		}
		in.Nlink++
		if err := tx.Tree(format.FSTree).Put(k, format.MarshalInodeItem(in)); err != nil {
			return err
		}
	}
	fmt.Printf("damaged %d inodes\n", len(keys))
	return tx.Commit()
}
