package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/mkfs"
	"github.com/ddfs/ddfs/pkg/units"
)

const propExamples = `  ddfs prop get disk.img                      # image properties
  ddfs prop set disk.img label backup-2024     # the filesystem label (as e2label)
  ddfs prop get --json disk.img:/var/cache
  ddfs prop set disk.img:/var/cache dedupe off   # a subtree without dedupe (inherited)
  ddfs prop set disk.img:/logs compression zstd:9
  ddfs prop set disk.img compression s2          # the image default
  ddfs prop set disk.img alloc-policy tiered
  ddfs prop set disk.img:/archive data-tier 2    # new data of the subtree on tier 2
  ddfs prop set disk.img small-data-max 64K      # small extents on the metadata tier
  ddfs prop set disk.img discard async           # batched online discard (see trimtool policy)
Properties: label (the image only, at most 255 bytes), dedupe (on, off, inherit), compression (zstd[:N], s2, none, inherit),
data-tier (N >= 1, 1 the fastest tier; inherit: the slowest tier);
on the image also alloc-policy (classic, ssd-metadata, tiered),
small-data-max (SIZE, 0 off) and discard (off, sync, async; thresholds: trimtool policy).
`

func newPropCmd() *cobra.Command {
	c, fl, of := newCmd("prop get|set IMAGE[:PATH] [NAME [VALUE]]", "get or set properties: label, dedupe, compression, alloc-policy, discard", propExamples)
	asJSON := fl.Bool("json", false, "get: print a JSON object {name: value} (names in snake_case: alloc_policy)")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout := c.OutOrStdout()
		a := fl.Args()
		if len(a) > 0 {
			if err := cli.Verb(a[0], "get", "set"); err != nil {
				return err
			}
		}
		if len(a) < 2 || (a[0] == "get" && len(a) > 3) || (a[0] == "set" && len(a) != 4) || (a[0] != "get" && a[0] != "set") {
			return usageErr("usage: prop get|set IMAGE[:PATH] [NAME [VALUE]]")
		}
		o := parseOperand(a[1])
		image, path := o.image, abs(o.path)
		if o.image == "" {
			image, path = a[1], ""
		}
		im, err := of.openImage(image, a[0] == "set")
		if err != nil {
			return err
		}
		var name string
		if len(a) > 2 {
			name = strings.ReplaceAll(a[2], "_", "-") // the --json key names it too
		}
		if a[0] == "get" {
			defer im.close()
			props, err := getProps(im, path)
			if err != nil {
				return im.err(err)
			}
			keys := make([]string, 0, len(props))
			for k := range props {
				if name == "" || k == name {
					keys = append(keys, k)
				}
			}
			if name != "" && len(keys) == 0 {
				return usageErr("unknown property %q", name)
			}
			sort.Strings(keys)
			if *asJSON {
				m := map[string]jstr{}
				for _, k := range keys {
					m[propKey(k)] = jstr(props[k])
				}
				return cli.JSON(stdout, m)
			}
			for _, k := range keys {
				fmt.Fprintf(stdout, "%s=%s\n", k, props[k])
			}
			return nil
		}
		if err := setProp(im, path, name, a[3]); err != nil {
			im.f.Abort()
			im.close()
			return im.err(err)
		}
		return im.close()
	}
	return c
}

// propKey is a property's --json key: snake_case, as every --json key
// (alloc-policy: alloc_policy, info's key for the same setting).
func propKey(name string) string { return strings.ReplaceAll(name, "-", "_") }

func getProps(im *image, path string) (map[string]string, error) {
	s := im.f.Store().Super().Settings
	if path == "" {
		dd := "off"
		if s.Dedupe {
			dd = "on"
		}
		return map[string]string{"label": im.f.Store().Super().Label, "dedupe": dd, "compression": compressionName(s.Compression, s.CompressionLevel), "alloc-policy": s.AllocPolicy.String(),
			"small-data-max": strconv.FormatUint(s.SmallDataMax, 10), "discard": s.Discard.String()}, nil
	}
	in, err := im.f.Resolve(path, false)
	if err != nil {
		return nil, err
	}
	dd := map[format.DedupeProp]string{format.DedupeInherit: "inherit", format.DedupeOn: "on", format.DedupeOff: "off"}[in.Dedupe]
	comp := "inherit"
	if c, ok := in.Compression.Compression(); ok {
		comp = compressionName(c, 0)
	}
	tier := "inherit"
	if in.DataTier != 0 {
		tier = strconv.Itoa(int(in.DataTier))
	}
	return map[string]string{"dedupe": dd, "compression": comp, "data-tier": tier}, nil
}

func compressionName(c format.Compression, level uint8) string {
	if c == format.CompressZstd && level > 0 {
		return "zstd:" + strconv.Itoa(int(level))
	}
	return c.String()
}

func setProp(im *image, path, name, value string) error {
	if path == "" && name == "label" {
		return im.f.Store().SetLabel(value)
	}
	if path == "" {
		return im.f.Store().UpdateSettings(func(s *format.Settings) error {
			switch name {
			case "dedupe":
				on, err := onOff(value)
				s.Dedupe = on
				return err
			case "compression":
				c, l, err := mkfs.ParseCompression(value)
				s.Compression, s.CompressionLevel = c, l
				return err
			case "alloc-policy":
				p, err := format.ParseAllocPolicy(value)
				s.AllocPolicy = p
				return err
			case "discard":
				p, err := format.ParseDiscardPolicy(value)
				s.Discard = p
				return err
			case "small-data-max":
				n, err := units.ParseSize(value)
				if err != nil {
					return usageErr("small-data-max: %v", err)
				}
				s.SmallDataMax = n
				return nil
			}
			return usageErr("unknown image property %q (label, dedupe, compression, alloc-policy, small-data-max, discard)", name)
		})
	}
	in, err := im.f.Resolve(path, false)
	if err != nil {
		return err
	}
	var a fsys.SetProps
	switch name {
	case "dedupe":
		d := map[string]format.DedupeProp{"inherit": format.DedupeInherit, "on": format.DedupeOn, "off": format.DedupeOff}
		v, ok := d[value]
		if !ok {
			return usageErr("dedupe: want on, off or inherit")
		}
		a.Dedupe = &v
	case "compression":
		v := format.CompressInherit
		if value != "inherit" {
			c, _, err := mkfs.ParseCompression(value)
			if err != nil {
				return usageErr("%v", err)
			}
			v = format.CompressPropOf(c)
		}
		a.Compression = &v
	case "data-tier":
		v, err := parseDataTier(value)
		if err != nil {
			return err
		}
		a.DataTier = &v
	default:
		return usageErr("unknown property %q (dedupe, compression, data-tier)", name)
	}
	return im.f.SetProps(in, a)
}

func onOff(v string) (bool, error) {
	switch v {
	case "on", "1", "true":
		return true, nil
	case "off", "0", "false":
		return false, nil
	}
	return false, usageErr("want on or off, not %q", v)
}

// parseDataTier reads a data-tier value: inherit (0) or a tier 1..255.
func parseDataTier(v string) (uint8, error) {
	if v == "inherit" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 8)
	if err != nil || n == 0 {
		return 0, usageErr("data-tier: want a tier 1..255 or inherit, not %q", v)
	}
	return uint8(n), nil
}
