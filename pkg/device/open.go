package device

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// Mode is the access a device is opened with.
type Mode int

const (
	ReadOnly Mode = iota
	ReadWrite
)

func (m Mode) String() string {
	switch m {
	case ReadOnly:
		return "read-only"
	case ReadWrite:
		return "read-write"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// OpenOptions control Open.
type OpenOptions struct {
	Mode Mode
	// Create makes a missing image file of CreateSize bytes, sparse. An
	// existing file is opened as it is; refusing to overwrite is mkfs's job.
	Create     bool
	CreateSize int64
	// Wait blocks until a conflicting lock is released instead of failing
	// with ErrBusy. On a block device opened for writing it also waits for
	// the kernel's exclusive claim (a mount) to go away.
	Wait bool
	// Beside: a read-only open that finds a writer holding the image
	// opens beside it instead of failing or waiting (ReaderMarks).
	Beside bool
}

// Open opens the device named by spec and locks it: exclusively for
// ReadWrite, shared for ReadOnly.
//
// spec is a path to an image file or a block device, or "path@N" for
// partition N (1-based) of the partitioned image at path. "path@N" means a
// partition only when the literal path@N does not exist and path is a
// regular file, so image names containing '@' keep working.
//
// spec may also name an export of an NBD server: nbd://HOST[:PORT]/EXPORT
// or nbd+unix:///EXPORT?socket=PATH (see IsRemote).
func Open(spec string, opt OpenOptions) (Device, error) {
	dev, err := open(spec, opt)
	if err != nil {
		return nil, err
	}
	return faultFromEnv(spec, dev)
}

func open(spec string, opt OpenOptions) (Device, error) {
	if opt.Mode != ReadOnly && opt.Mode != ReadWrite {
		return nil, fmt.Errorf("open %s: invalid mode %d", spec, opt.Mode)
	}
	if IsRemote(spec) {
		return openNBD(spec, opt)
	}
	fi, err := os.Stat(spec)
	switch {
	case err == nil:
		return openExisting(spec, fi, opt)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("open %s: %w", spec, err)
	}
	if base, n, ok := splitPartSpec(spec); ok {
		bfi, berr := os.Stat(base)
		if berr == nil && bfi.Mode().IsRegular() {
			return openPartition(spec, base, n, opt)
		}
		if berr == nil && IsBlockMode(bfi.Mode()) {
			return nil, fmt.Errorf("open %s: %s is a block device; open its partition's device node instead", spec, base)
		}
	}
	if !opt.Create {
		return nil, fmt.Errorf("open %s: %w", spec, err)
	}
	return createFile(spec, opt)
}

func openExisting(spec string, fi fs.FileInfo, opt OpenOptions) (Device, error) {
	switch {
	case fi.Mode().IsRegular():
		d, err := openFile(spec, opt)
		if err != nil {
			return nil, err
		}
		if err := d.lockAll(opt.Wait, opt.Beside); err != nil {
			d.f.Close()
			return nil, err
		}
		return d, nil
	case IsBlockMode(fi.Mode()):
		return openBlock(spec, opt)
	default:
		return nil, fmt.Errorf("open %s: not a regular file or block device (mode %v)", spec, fi.Mode())
	}
}

// createFile makes a sparse image: size is set with ftruncate, never
// preallocated, so a huge image costs only what gets written.
func createFile(path string, opt OpenOptions) (Device, error) {
	if opt.Mode != ReadWrite {
		return nil, fmt.Errorf("create %s: Create needs ReadWrite mode", path)
	}
	if opt.CreateSize <= 0 {
		return nil, fmt.Errorf("create %s: size %d must be positive", path, opt.CreateSize)
	}
	// O_EXCL: if someone created it since our Stat, do not truncate theirs.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	d := &fileDevice{f: f, name: path, size: opt.CreateSize}
	// Lock before sizing so nobody else starts writing a half-made image.
	if err := d.lockAll(opt.Wait, opt.Beside); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Truncate(opt.CreateSize); err != nil {
		d.Close()
		os.Remove(path)
		return nil, fmt.Errorf("create %s: set size %d: %w", path, opt.CreateSize, err)
	}
	return d, nil
}

// PartitionOf reports whether spec names partition N of an existing
// image or device ("path@N", path there, the literal spec not): a name
// with '@' that is no such spec is a plain file name.
func PartitionOf(spec string) (string, int, bool) {
	path, n, ok := splitPartSpec(spec)
	if !ok {
		return "", 0, false
	}
	if _, err := os.Lstat(spec); err == nil {
		return "", 0, false
	}
	if _, err := os.Stat(path); err != nil {
		return "", 0, false
	}
	return path, n, true
}

// splitPartSpec splits "path@N" with N a positive decimal integer.
func splitPartSpec(spec string) (string, int, bool) {
	i := strings.LastIndexByte(spec, '@')
	if i <= 0 || i == len(spec)-1 {
		return "", 0, false
	}
	digits := spec[i+1:]
	for _, c := range digits {
		if c < '0' || c > '9' {
			return "", 0, false
		}
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 {
		return "", 0, false
	}
	return spec[:i], n, true
}

// IsBlockDevice reports whether path (after symlinks) is a block device.
func IsBlockDevice(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && IsBlockMode(fi.Mode())
}

// IsBlockMode reports whether m is a block device's mode.
func IsBlockMode(m fs.FileMode) bool {
	return m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0
}
