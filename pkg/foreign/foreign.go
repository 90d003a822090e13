// Package foreign reads other filesystems' images (ext2/3/4, squashfs,
// ISO 9660, FAT12/16/32), strictly read-only and without mounting, through
// github.com/diskfs/go-diskfs (issue 41, first slice).
//
// An image (or partition N of a partitioned disk image, "disk.img@N") is
// opened through pkg/device read-only (O_RDONLY, a shared lock) and its
// filesystem found by signature (Probe). go-diskfs then reads it through
// a backend of ours that refuses every write and every request for the
// file itself, and counts what one operation reads.
//
// Every byte of a foreign image is hostile input: superblock fields that
// size go-diskfs's allocations are bounded against the image before it
// reads them (bounds.go), FAT cluster chains are checked for loops before
// go-diskfs follows one (fat.go), one operation may read at most
// opBudget bytes and the same offset at most offsetRevisits times (a loop
// in an extent tree or a directory ends as ErrCorrupt instead of a hang),
// and a panic inside go-diskfs becomes an error naming the image and the
// path. Path walks follow at most maxSymlinks links and maxDepth levels.
//
// An Image is not safe for concurrent use.
package foreign

import (
	"errors"
	"fmt"
	"syscall"
)

// Kind is a filesystem type found by signature.
type Kind string

// The kinds Probe recognises. go-diskfs v1.9.4 reads each of them (ext2
// and ext3 through its ext4 reader).
const (
	Ext2     Kind = "ext2"
	Ext3     Kind = "ext3"
	Ext4     Kind = "ext4"
	Squashfs Kind = "squashfs"
	ISO9660  Kind = "iso9660"
	FAT12    Kind = "fat12"
	FAT16    Kind = "fat16"
	FAT32    Kind = "fat32"
	// MBR and GPT are partition tables, not filesystems: Info lists their
	// partitions, and "IMAGE@N" opens partition N.
	MBR Kind = "mbr"
	GPT Kind = "gpt"
)

// Sentinel errors callers test with errors.Is.
var (
	// ErrUnknown: no foreign filesystem signature at the start of the image.
	ErrUnknown = errors.New("no ext2/3/4, squashfs, ISO 9660 or FAT signature")
	// ErrCorrupt: the image contradicts itself or its bounds, go-diskfs
	// panicked on it, or an operation read more than a sane walk would.
	ErrCorrupt = errors.New("foreign image is corrupt")
	// ErrUnsupported: the image or file uses something go-diskfs cannot
	// read (correctly); refused rather than read wrong.
	ErrUnsupported = errors.New("not supported by the foreign image reader")
	// ErrPartitionTable: the image is a partitioned disk; name a partition.
	ErrPartitionTable = errors.New("image holds a partition table: name a partition as IMAGE@N")
)

// IsFilesystem reports whether k is a filesystem (not a partition table).
func (k Kind) IsFilesystem() bool { return k != "" && k != MBR && k != GPT }

func (k Kind) isExt() bool { return k == Ext2 || k == Ext3 || k == Ext4 }

// ReadOnly is the error of every change asked of a foreign image: it
// matches syscall.EROFS and names the format ("e.img: ext4 image:
// read-only file system (...)").
func ReadOnly(k Kind, name string) error {
	return fmt.Errorf("%s: %w", name, &roError{k})
}

type roError struct{ k Kind }

func (e *roError) Error() string {
	return fmt.Sprintf("%s image: %v (ddfs reads foreign images, never changes them)", e.k, syscall.EROFS)
}
func (e *roError) Unwrap() error { return syscall.EROFS }
