package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/mkfs"
	"github.com/ddfs/ddfs/pkg/units"
	"github.com/ddfs/ddfs/pkg/volume"
)

const deviceExamples = `  ddfs device usage disk.img
  ddfs device set disk.img 2 rotational=1,seek_speed=120,bandwidth=150M
  ddfs device add -b 64G disk.img hdd2.img:rotational=1
  ddfs device remove disk.img 2              # or the device's path
  ddfs device replace disk.img b.img new.img:rotational=1
  ddfs device resize disk.img 1 32G          # or max: the device's size
`

// cmdDevice is `ddfs device usage|set|add|remove|replace|resize`.
func cmdDevice(args []string, stdout, stderr io.Writer) error {
	fl, of := newCmd("device", "device usage|set|add|remove|replace|resize IMAGE ...", deviceExamples, stdout)
	size := fl.StringP("byte-count", "b", "", "add, replace: size of an image file to create (replace: default the old device's size)")
	force := fl.BoolP("force", "f", false, "add, replace: overwrite a filesystem on the new device")
	asJSON := fl.Bool("json", false, "usage: print JSON")
	if err := parseFlags(fl, args); err != nil {
		return err
	}
	a := fl.Args()
	if len(a) < 2 {
		return usageErr("want usage|set|add IMAGE ...")
	}
	var bytes uint64
	if *size != "" {
		var err error
		if bytes, err = units.ParseSize(*size); err != nil {
			return usageErr("-b: %v", err)
		}
	}
	switch {
	case a[0] == "remove" && len(a) == 3:
		return deviceRemove(of, a[1], a[2], stdout, stderr)
	case a[0] == "replace" && len(a) == 4:
		return deviceReplace(of, a[1], a[2], a[3], bytes, *force, stdout, stderr)
	case a[0] == "resize" && len(a) == 4:
		return deviceResize(of, a[1], a[2], a[3], stdout, stderr)
	case a[0] == "usage" && len(a) == 2:
		fs, err := of.open(a[1], false)
		if err != nil {
			return err
		}
		defer fs.Close()
		return deviceUsage(stdout, fs.DevItems(), fs.DeviceTiers(), fs.Vol.Chunks.All(), *asJSON)
	case a[0] == "set" && len(a) == 4:
		devid, err := strconv.ParseUint(a[2], 10, 64)
		if err != nil {
			return usageErr("devid %q: a number", a[2])
		}
		spec := mkfs.DeviceSpec{}
		for _, kv := range strings.Split(a[3], ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return usageErr("%q: want key=value", kv)
			}
			if err := spec.Set(k, v); err != nil {
				return usageErr("%v", err)
			}
		}
		fs, err := of.open(a[1], true)
		if err != nil {
			return err
		}
		defer fs.Close()
		return fs.UpdateDevice(devid, func(d *format.DevItem) error {
			if spec.Rotational != nil {
				d.Rotational = *spec.Rotational
			}
			if spec.SeekSpeed != nil {
				d.SeekSpeed = *spec.SeekSpeed
			}
			if spec.Bandwidth != nil {
				d.Bandwidth = *spec.Bandwidth
			}
			if spec.Tier != nil {
				d.Tier = *spec.Tier
			}
			return nil
		})
	case a[0] == "add" && len(a) == 3:
		spec, err := mkfs.ParseDeviceSpec(a[2])
		if err != nil {
			return usageErr("%v", err)
		}
		fs, err := of.open(a[1], true)
		if err != nil {
			return err
		}
		defer fs.Close()
		if st, err := os.Stat(spec.Path); err == nil {
			for _, d := range fs.Vol.Devices() {
				if dst, err := os.Stat(d.Path); err == nil && os.SameFile(st, dst) {
					return fmt.Errorf("%s is already device %d of this filesystem", spec.Path, d.ID)
				}
			}
		}
		nd, _, err := mkfs.PrepareDevice(spec, bytes, *force, filepath.Dir(a[1]))
		if err != nil {
			return err
		}
		id, err := fs.AddDevice(nd)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "added %s as device %d\n", spec.Path, id)
		return nil
	}
	return usageErr("usage: device usage IMAGE | device set IMAGE DEVID key=value,... | device add IMAGE NEWDEV[:props] | device remove IMAGE DEVID|PATH | device replace IMAGE OLD NEWPATH[:props] | device resize IMAGE DEVID SIZE|max")
}

// deviceUsageJSON is one device of `device usage --json`.
type deviceUsageJSON struct {
	DevID       uint64            `json:"devid"`
	Path        string            `json:"path"`
	Size        uint64            `json:"size"`
	Unallocated uint64            `json:"unallocated"`
	Allocated   map[string]uint64 `json:"allocated"` // "type/profile" -> bytes on this device
	Rotational  bool              `json:"rotational"`
	SeekSpeed   uint64            `json:"seek_speed"`
	Bandwidth   uint64            `json:"bandwidth"`
	Tier        uint8             `json:"tier"`
}

func deviceUsage(w io.Writer, items []*format.DevItem, tiers map[uint64]int, chunks []*volume.Chunk, asJSON bool) error {
	var out []deviceUsageJSON
	for _, d := range items {
		u := deviceUsageJSON{DevID: d.DevID, Path: d.Path, Size: d.TotalBytes, Allocated: map[string]uint64{},
			Rotational: d.Rotational, SeekSpeed: d.SeekSpeed, Bandwidth: d.Bandwidth, Tier: uint8(tiers[d.DevID])}
		var used uint64
		for _, c := range chunks {
			for _, s := range c.Stripes {
				if s.DevID == d.DevID {
					u.Allocated[c.Type.String()+"/"+c.Profile.String()] += c.StripeLength()
					used += c.StripeLength()
				}
			}
		}
		u.Unallocated = d.TotalBytes - min(used, d.TotalBytes)
		out = append(out, u)
	}
	if asJSON {
		return cli.JSON(w, out)
	}
	for _, u := range out {
		rot := "ssd"
		if u.Rotational {
			rot = "rotational"
		}
		fmt.Fprintf(w, "devid %d %s: size %s, unallocated %s, %s, %d seeks/s, %s/s, tier %d\n",
			u.DevID, u.Path, units.Human(u.Size), units.Human(u.Unallocated), rot, u.SeekSpeed, units.Human(u.Bandwidth), u.Tier)
		keys := make([]string, 0, len(u.Allocated))
		for k := range u.Allocated {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "   %-20s %s\n", k, units.Human(u.Allocated[k]))
		}
	}
	return nil
}
