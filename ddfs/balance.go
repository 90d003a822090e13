package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
)

const balanceExamples = `  ddfs balance disk.img                      # chunks written degraded back to the set's profiles
  ddfs device add -b 64G disk.img disk2.img
  ddfs balance -d raid1 -m raid1 disk.img    # single/dup -> raid1 on two devices
  ddfs balance -m raid1c3 disk.img
  ddfs balance -d raid5 -m raid6 disk.img    # to parity (again once devices join: wider stripes)
  ddfs balance -f -m single disk.img        # lowering metadata redundancy needs -f
`

// cmdBalance is `ddfs balance IMAGE [-d PROFILE] [-m PROFILE]`.
func newBalanceCmd() *cobra.Command {
	c, fl, of := newCmd("balance IMAGE [-d PROFILE] [-m PROFILE]", "convert chunk profiles (-d data, -m metadata); alone, restore chunks written degraded to the set's profiles", balanceExamples)
	data := fl.StringP("data", "d", "", "convert data chunks to PROFILE (single, dup, raid0, raid1, raid1c3, raid10, raid5, raid6)")
	meta := fl.StringP("metadata", "m", "", "convert metadata and system chunks to PROFILE")
	force := fl.BoolP("force", "f", false, "allow -m to lower the metadata's redundancy (as btrfs balance -f)")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
		if fl.NArg() != 1 {
			return usageErr("want exactly one IMAGE")
		}
		if *data == "" && *meta == "" {
			return restoreProfiles(fl.Arg(0), of, stdout, stderr)
		}
		var dp, mp *format.Profile
		for _, f := range []struct {
			name string
			out  **format.Profile
		}{{*data, &dp}, {*meta, &mp}} {
			if f.name == "" {
				continue
			}
			p, err := format.ParseProfile(f.name)
			if err != nil {
				return usageErr("%v", err)
			}
			*f.out = &p
		}
		image := fl.Arg(0)
		fs, err := of.open(image, true)
		if err != nil {
			return err
		}
		defer of.closeStats(fs)
		if mp != nil && !*force {
			if err := keepsMetaRedundancy(fs, *mp); err != nil {
				return fmt.Errorf("%s: %w", image, err)
			}
		}
		n, err := fs.Balance(dp, mp, relocProgress())
		reportReloc(stderr, "balance: "+image, fs)
		if err != nil {
			return fmt.Errorf("%s: %w", image, err)
		}
		fmt.Fprintf(stdout, "converted %d chunks\n", n)
		return nil
	}
	return c
}

// restoreProfiles is `ddfs balance IMAGE`: the chunks a degraded set
// made below its profiles move back to them (as `fsck.ddfs -y` and
// `ddfs scrub --repair` do).
func restoreProfiles(image string, of *openFlags, stdout, stderr io.Writer) error {
	fs, err := of.open(image, true)
	if err != nil {
		return err
	}
	defer of.closeStats(fs)
	n, err := fs.RestoreProfiles(relocProgress())
	reportReloc(stderr, "balance: "+image, fs)
	if err != nil {
		return fmt.Errorf("%s: %w", image, err)
	}
	_, dp, mp := fs.BelowProfile()
	fmt.Fprintf(stdout, "restored %d chunks to the set's profiles (data %v, metadata %v)\n", n, dp, mp)
	return nil
}

// keepsMetaRedundancy refuses, as btrfs does without -f, a metadata
// profile that survives fewer lost devices than the metadata has now:
// losing the metadata loses every file.
func keepsMetaRedundancy(fs *store.FS, to format.Profile) error {
	want, _ := to.Info()
	for _, bg := range fs.BlockGroups() {
		if bg.Chunk.Type == format.ChunkData {
			continue
		}
		if have, _ := bg.Chunk.Profile.Info(); have.DeviceFailures() > want.DeviceFailures() {
			return fmt.Errorf("-m %v lowers the metadata's redundancy (%v survives %d lost devices, %v %d): give -f to do it anyway",
				to, bg.Chunk.Profile, have.DeviceFailures(), to, want.DeviceFailures())
		}
	}
	return nil
}
