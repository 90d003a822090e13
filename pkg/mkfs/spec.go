// Package mkfs creates ddfs filesystems: it parses device specs with
// their properties, refuses to overwrite data it recognises, creates
// image files sparse, and writes the first transaction.
package mkfs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/units"
)

// DeviceSpec is one device argument: PATH[:key=value,...].
type DeviceSpec struct {
	Path string
	// Properties given by the user; nil fields take the backend's or the
	// class defaults.
	Rotational *bool
	SeekSpeed  *uint64
	Bandwidth  *uint64
	Tier       *uint8
}

// ParseDeviceSpec parses "hdd0.img:rotational=1,seek_speed=10,bandwidth=150M".
// A colon starts properties only when what follows contains '='; in a
// network spec (nbd://, whose query has '=' too) only a colon after the
// URL's authority does.
func ParseDeviceSpec(arg string) (DeviceSpec, error) {
	spec := DeviceSpec{Path: arg}
	path, props := arg, ""
	if url, rest, hasProps, ok := device.SplitRemote(arg); ok {
		if !hasProps {
			return spec, nil
		}
		path, props = url, rest
	} else if i := strings.LastIndexByte(arg, ':'); i >= 0 {
		path, props = arg[:i], arg[i+1:]
	}
	if !strings.Contains(props, "=") {
		return spec, nil
	}
	spec.Path = path
	if spec.Path == "" {
		return spec, fmt.Errorf("%q: empty device path", arg)
	}
	for _, kv := range strings.Split(props, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return spec, fmt.Errorf("%q: property %q is not key=value", arg, kv)
		}
		if err := spec.Set(k, v); err != nil {
			return spec, fmt.Errorf("%q: %w", arg, err)
		}
	}
	return spec, nil
}

// Set applies one property.
func (s *DeviceSpec) Set(key, value string) error {
	switch key {
	case "rotational":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("rotational=%s: want 0 or 1", value)
		}
		s.Rotational = &b
	case "seek_speed":
		n, err := strconv.ParseUint(value, 10, 64)
		if err != nil || n == 0 {
			return fmt.Errorf("seek_speed=%s: want seeks per second, > 0", value)
		}
		s.SeekSpeed = &n
	case "bandwidth":
		n, err := units.ParseSize(value)
		if err != nil {
			return fmt.Errorf("bandwidth=%s: %v", value, err)
		}
		if n == 0 {
			return fmt.Errorf("bandwidth=%s: want bytes per second, e.g. 150M", value)
		}
		s.Bandwidth = &n
	case "tier":
		n, err := strconv.ParseUint(value, 10, 8)
		if err != nil || n == 0 {
			return fmt.Errorf("tier=%s: want 1..255", value)
		}
		t := uint8(n)
		s.Tier = &t
	default:
		return fmt.Errorf("unknown device property %q (want rotational, seek_speed, bandwidth, tier)", key)
	}
	return nil
}

// Class defaults when neither the user nor the backend tells: a SATA SSD
// and a 7200 rpm disk.
const (
	SSDSeekSpeed = 20000
	SSDBandwidth = 500 << 20
	HDDSeekSpeed = 120
	HDDBandwidth = 150 << 20
)
