package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/mkfs"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/units"
	"github.com/ddfs/ddfs/pkg/volume"
)

func newEnableCmd() *cobra.Command {
	c, fl := newCmd("enable [--block SIZE] [--hash ALGO] IMAGE", "dedupe new writes (the index persists in the image)", "  dedupe-tool enable --block 64K backup.img\n")
	block := fl.String("block", "", "dedupe block size (power of two, 4K..8M; default: keep, or 128K)")
	hash := fl.String("hash", "", "xxh3 (matches proven by their entry's BLAKE3 tail or byte-compared), blake3 or sha256 (default: keep; xxh3 when no hash was ever chosen)")
	var stats cli.Stats
	cli.StatsVar(fl, &stats, "per-device I/O")
	degraded := degradedFlag(fl)
	c.RunE = func(c *cobra.Command, args []string) error {
		stderr := c.ErrOrStderr()
		if len(args) != 1 {
			return cli.Usagef("want one IMAGE")
		}
		var log2 uint8
		var h format.CsumType
		if *block != "" {
			size, err := units.ParseSize(*block)
			if err != nil {
				return cli.Usagef("--block: %v", err)
			}
			if log2, err = mkfs.DedupeBlockLog2(size); err != nil {
				return cli.Usagef("--block: %v", err)
			}
		}
		if *hash != "" {
			var err error
			if h, err = mkfs.ParseDedupeHash(*hash); err != nil {
				return cli.Usagef("--hash: %v", err)
			}
		}
		return change(args[0], string(stats), *degraded, stderr, func(s *format.Settings) error {
			s.Dedupe = true
			if log2 != 0 {
				s.DedupeBlockLog2 = log2
			}
			if h != 0 {
				s.DedupeHash = h
			} else if s.DedupeHash == 0 {
				s.DedupeHash = mkfs.DefaultDedupeHash // the default that pays off (README, "Which hash")
			}
			return nil
		})
	}
	return c
}

func newDisableCmd() *cobra.Command {
	c, fl := newCmd("disable IMAGE", "stop deduping new writes (shared data stays shared)", "  dedupe-tool disable backup.img\n")
	var stats cli.Stats
	cli.StatsVar(fl, &stats, "per-device I/O")
	degraded := degradedFlag(fl)
	c.RunE = func(c *cobra.Command, args []string) error {
		stderr := c.ErrOrStderr()
		if len(args) != 1 {
			return cli.Usagef("want one IMAGE")
		}
		return change(args[0], string(stats), *degraded, stderr, func(s *format.Settings) error { s.Dedupe = false; return nil })
	}
	return c
}

// change updates the settings; the exclusive lock keeps writers out.
func change(image, stats string, degraded bool, stderr io.Writer, fn func(*format.Settings) error) error {
	fs, err := store.Open([]string{image}, volume.Options{Write: true, Degraded: degraded, Extra: extraDevices})
	if err != nil {
		return err
	}
	inspect.ReportHeals(stderr, "dedupe-tool", image, fs)
	defer fs.Close()
	err = fs.UpdateSettings(fn)
	inspect.MaybePrintIOStats(stderr, fs, stats)
	return err
}
