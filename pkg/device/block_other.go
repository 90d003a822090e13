//go:build !linux

package device

import "fmt"

func openBlock(path string, opt OpenOptions) (Device, error) {
	return nil, fmt.Errorf("open %s: block devices: %w", path, ErrNotSupported)
}
