package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/mkfs"
	"github.com/ddfs/ddfs/pkg/units"
)

const deviceExamples = `  ddfs device usage disk.img
  ddfs device set disk.img 2 rotational=1,seek_speed=120,bandwidth=150M
  ddfs device add -b 64G disk.img hdd2.img:rotational=1
  ddfs device remove disk.img 2              # or the device's path
  ddfs device replace disk.img 2 spare.img:rotational=1
  ddfs device resize disk.img 1 32G          # or max: the device's size
`

// newDeviceCmd is `ddfs device usage|set|add|remove|replace|resize`.
func newDeviceCmd() *cobra.Command {
	c := cli.NewGroup("device", "device usage, set properties, add, remove, replace or resize a device", deviceExamples)
	c.AddCommand(newDeviceUsageCmd(), newDeviceSetCmd(), newDeviceAddCmd(), newDeviceRemoveCmd(),
		newDeviceReplaceCmd(), newDeviceResizeCmd())
	return c
}

// newDevCmd makes a device subcommand taking exactly n operands.
func newDevCmd(use, short, example string, n int) (*cobra.Command, *pflag.FlagSet, *openFlags) {
	c, fl, of := newCmd(use, short, example)
	c.Args = func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErr("want %s", strings.TrimPrefix(use, c.Name()+" "))
		}
		return nil
	}
	return c, fl, of
}

// sizeFlag is -b SIZE of device add and replace.
func sizeFlag(fl *pflag.FlagSet, help string) func() (uint64, error) {
	size := fl.StringP("byte-count", "b", "", help)
	return func() (uint64, error) {
		if *size == "" {
			return 0, nil
		}
		n, err := units.ParseSize(*size)
		if err != nil {
			return 0, usageErr("-b: %v", err)
		}
		if n == 0 { // 0 would read as no -b at all
			return 0, usageErr("-b: size %q must be positive", *size)
		}
		return n, nil
	}
}

func newDeviceUsageCmd() *cobra.Command {
	c, fl, of := newDevCmd("usage [--json] [-b|-h] IMAGE", "per device: size, allocated per type/profile, properties, tier",
		"  ddfs device usage disk.img\n  ddfs device usage -b disk.img\n  ddfs device usage --json disk.img", 1)
	cli.NoHelpShorthand(c) // -h is human sizes, as btrfs device usage -h
	asJSON := fl.Bool("json", false, "print JSON")
	raw := fl.BoolP("bytes", "b", false, "print sizes in bytes")
	fl.BoolP("human-readable", "h", false, "print sizes with K, M, G (the default)")
	c.RunE = func(c *cobra.Command, args []string) error {
		fs, err := of.open(args[0], false)
		if err != nil {
			return err
		}
		defer fs.Close()
		return deviceUsage(c.OutOrStdout(), inspect.GetDeviceUsage(fs), *asJSON, *raw)
	}
	return c
}

func newDeviceSetCmd() *cobra.Command {
	c, _, of := newDevCmd("set IMAGE DEVID key=value,...", "set device properties: rotational, seek_speed, bandwidth, tier",
		"  ddfs device set disk.img 2 rotational=1,seek_speed=120,bandwidth=150M", 3)
	c.RunE = func(c *cobra.Command, a []string) error {
		devid, err := strconv.ParseUint(a[1], 10, 64)
		if err != nil {
			return usageErr("devid %q: a number", a[1])
		}
		spec := mkfs.DeviceSpec{}
		for _, kv := range strings.Split(a[2], ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return usageErr("%q: want key=value", kv)
			}
			if err := spec.Set(k, v); err != nil {
				return usageErr("%v", err)
			}
		}
		fs, err := of.open(a[0], true)
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
	}
	return c
}

func newDeviceAddCmd() *cobra.Command {
	c, fl, of := newDevCmd("add [-b SIZE] [-f] IMAGE NEWDEV[:props]", "add a device (an image file is created with -b SIZE)",
		"  ddfs device add -b 64G disk.img hdd2.img:rotational=1", 2)
	size := sizeFlag(fl, "size of an image file to create")
	force := fl.BoolP("force", "f", false, "overwrite a filesystem on the new device")
	c.RunE = func(c *cobra.Command, a []string) error {
		bytes, err := size()
		if err != nil {
			return err
		}
		spec, err := mkfs.ParseDeviceSpec(a[1])
		if err != nil {
			return usageErr("%v", err)
		}
		fs, err := of.open(a[0], true)
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
		nd, _, err := mkfs.PrepareDevice(spec, bytes, *force, filepath.Dir(a[0]))
		if err != nil {
			return err
		}
		id, err := fs.AddDevice(nd)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.OutOrStdout(), "added %s as device %d\n", spec.Path, id)
		return nil
	}
	return c
}

func newDeviceRemoveCmd() *cobra.Command {
	c, _, of := newDevCmd("remove IMAGE DEVID|PATH", "move a device's chunks to the others, then drop it",
		"  ddfs device remove disk.img 2              # or the device's path", 2)
	c.RunE = func(c *cobra.Command, a []string) error {
		return deviceRemove(of, a[0], a[1], c.OutOrStdout(), c.ErrOrStderr())
	}
	return c
}

func newDeviceReplaceCmd() *cobra.Command {
	c, fl, of := newDevCmd("replace [-b SIZE] [-f] IMAGE OLD NEWPATH[:props]", "copy a device onto a new one, then drop it",
		"  ddfs device replace disk.img 2 spare.img:rotational=1\n  ddfs device replace --degraded disk.img 2 spare.img   # device 2 gone; several gone: one at a time", 3)
	size := sizeFlag(fl, "size of an image file to create (default the old device's size)")
	force := fl.BoolP("force", "f", false, "overwrite a filesystem on the new device")
	c.RunE = func(c *cobra.Command, a []string) error {
		bytes, err := size()
		if err != nil {
			return err
		}
		return deviceReplace(of, a[0], a[1], a[2], bytes, *force, c.OutOrStdout(), c.ErrOrStderr())
	}
	return c
}

func newDeviceResizeCmd() *cobra.Command {
	c, _, of := newDevCmd("resize IMAGE DEVID SIZE|max", "grow or shrink a device",
		"  ddfs device resize disk.img 1 32G          # or max: the device's size", 3)
	c.RunE = func(c *cobra.Command, a []string) error {
		return deviceResize(of, a[0], a[1], a[2], c.OutOrStdout(), c.ErrOrStderr())
	}
	return c
}

// deviceUsage prints `device usage`: the devices as inspect.Devices
// shows them for ddfs info (path as opened, ranked tier).
func deviceUsage(w io.Writer, out []inspect.DeviceTypes, asJSON, raw bool) error {
	if asJSON {
		return cli.JSON(w, out)
	}
	size := units.Human
	if raw {
		size = func(n uint64) string { return strconv.FormatUint(n, 10) }
	}
	for _, u := range out {
		rot := "ssd"
		if u.Rotational {
			rot = "rotational"
		}
		missing := ""
		if u.Missing {
			missing = " (missing)"
		}
		fmt.Fprintf(w, "devid %d %s%s: size %s, unallocated %s, %s, %d seeks/s, %s/s, tier %d\n",
			u.DevID, u.Path, missing, size(u.Size), size(u.Unallocated), rot, u.SeekSpeed, size(u.Bandwidth), u.Tier)
		for _, t := range u.Types {
			fmt.Fprintf(w, "   %-20s %s\n", t.Type+"/"+t.Profile, size(t.Allocated))
		}
	}
	return nil
}
