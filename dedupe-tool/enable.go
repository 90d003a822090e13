package main

import (
	"io"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/mkfs"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/units"
	"github.com/ddfs/ddfs/pkg/volume"
)

func cmdEnable(args []string, stdout, stderr io.Writer) error {
	fl := cli.NewFlags("dedupe-tool enable", "dedupe-tool enable [--block SIZE] [--hash ALGO] IMAGE", "  dedupe-tool enable --block 64K backup.img\n", stdout)
	block := fl.String("block", "", "dedupe block size (power of two, 4K..8M; default: keep, or 128K)")
	hash := fl.String("hash", "", "blake3 or sha256 (default: keep; blake3 when no hash was ever chosen)")
	stats := fl.Bool("stats", false, "print per-device I/O on stderr")
	degraded := fl.Bool("degraded", false, "open a mirrored set with a device missing or unusable (reads use surviving copies)")
	if err := cli.Parse(fl, args); err != nil {
		return err
	}
	if fl.NArg() != 1 {
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
	return change(fl.Arg(0), *stats, *degraded, stderr, func(s *format.Settings) error {
		s.Dedupe = true
		if log2 != 0 {
			s.DedupeBlockLog2 = log2
		}
		if h != 0 {
			s.DedupeHash = h
		} else if s.DedupeHash == 0 {
			s.DedupeHash = format.CsumBLAKE3 // the default that pays off (README, "Which hash")
		}
		return nil
	})
}

func cmdDisable(args []string, stdout, stderr io.Writer) error {
	fl := cli.NewFlags("dedupe-tool disable", "dedupe-tool disable IMAGE", "  dedupe-tool disable backup.img\n", stdout)
	stats := fl.Bool("stats", false, "print per-device I/O on stderr")
	degraded := fl.Bool("degraded", false, "open a mirrored set with a device missing or unusable (reads use surviving copies)")
	if err := cli.Parse(fl, args); err != nil {
		return err
	}
	if fl.NArg() != 1 {
		return cli.Usagef("want one IMAGE")
	}
	return change(fl.Arg(0), *stats, *degraded, stderr, func(s *format.Settings) error { s.Dedupe = false; return nil })
}

// change updates the settings; the exclusive lock keeps writers out.
func change(image string, stats, degraded bool, stderr io.Writer, fn func(*format.Settings) error) error {
	fs, err := store.Open([]string{image}, volume.Options{Write: true, Degraded: degraded})
	if err != nil {
		return err
	}
	inspect.ReportHeals(stderr, "dedupe-tool", image, fs)
	defer fs.Close()
	err = fs.UpdateSettings(fn)
	inspect.MaybePrintIOStats(stderr, fs, stats)
	return err
}
