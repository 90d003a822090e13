package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/units"
	"github.com/ddfs/ddfs/pkg/volume"
)

const policyExamples = `  trimtool policy disk.img                      # show the policy
  trimtool policy disk.img async                # batched discards after each commit
  trimtool policy disk.img async --metadata-min 4M --max-bytes-per-commit 512M
  trimtool policy disk.img sync                 # discard every freed extent in its commit
  trimtool policy disk.img off                  # leave discards to trimtool
off: only trimtool discards. sync: each extent a commit frees is discarded right after the
commit is durable (metadata too, every copy). async: freed ranges are recorded with the commit,
then discarded in merged batches by the same command: data at once, metadata only inside a
free range of at least --metadata-min (default 1M); --max-bytes-per-commit (0: no bound)
holds the rest back, recorded, for a later command or trimtool. Switching away from async leaves
what is pending recorded until a full trimtool run discards it and drops the records.
`

// policyJSON is what `trimtool policy --json` prints.
type policyJSON struct {
	Discard           string `json:"discard"`
	MetadataMin       uint64 `json:"metadata_min"`
	MaxBytesPerCommit uint64 `json:"max_bytes_per_commit"`
	PendingBytes      uint64 `json:"pending_bytes"`
}

func newPolicyCmd() *cobra.Command {
	c := cli.NewCommand("policy IMAGE [off|sync|async] [options]", "show or set the online discard policy", policyExamples)
	fl := c.Flags()
	metaMin := fl.String("metadata-min", "", "async: discard freed metadata only in free ranges at least this long")
	maxBytes := fl.String("max-bytes-per-commit", "", "async: discard at most this much after one commit (0: no bound)")
	asJSON := fl.Bool("json", false, "print JSON")
	var stats cli.Stats
	cli.StatsVar(fl, &stats, "per-device I/O")
	var extra []string
	fl.StringArrayVar(&extra, "device", nil, "another device of the set (repeatable)")
	degraded := fl.Bool("degraded", false, "open a mirrored set with a device missing or unusable (reads use surviving copies)")
	c.RunE = func(c *cobra.Command, args []string) error {
		return policy(args, c.OutOrStdout(), c.ErrOrStderr(), policyFlags{*metaMin, *maxBytes, *asJSON, string(stats), extra, *degraded})
	}
	return c
}

// policyFlags are the options of trimtool policy.
type policyFlags struct {
	metaMin, maxBytes string
	asJSON            bool
	stats             string
	extra             []string
	degraded          bool
}

func policy(args []string, stdout, stderr io.Writer, f policyFlags) (err error) {
	if len(args) < 1 || len(args) > 2 {
		return cli.Usagef("want IMAGE and optionally off, sync or async")
	}
	change := len(args) == 2 || f.metaMin != "" || f.maxBytes != ""
	var set func(*format.Settings) error
	if change {
		var policy *format.DiscardPolicy
		if len(args) == 2 {
			p, err := format.ParseDiscardPolicy(args[1])
			if err != nil {
				return cli.Usagef("%v", err)
			}
			policy = &p
		}
		var mm, mb *uint64
		for _, a := range []struct {
			val  string
			dst  **uint64
			name string
		}{{f.metaMin, &mm, "--metadata-min"}, {f.maxBytes, &mb, "--max-bytes-per-commit"}} {
			if a.val == "" {
				continue
			}
			n, err := units.ParseSize(a.val)
			if err != nil {
				return cli.Usagef("%s: %v", a.name, err)
			}
			*a.dst = &n
		}
		set = func(s *format.Settings) error {
			if policy != nil {
				s.Discard = *policy
			}
			if mm != nil {
				s.DiscardMetadataMin = *mm
			}
			if mb != nil {
				s.DiscardMaxPerCommit = *mb
			}
			return nil
		}
	}
	fs, err := store.Open(args[:1], volume.Options{Write: change, Extra: f.extra, Degraded: f.degraded})
	if err != nil {
		return err
	}
	inspect.ReportHeals(stderr, "trimtool: policy", args[0], fs)
	defer func() {
		// Close may still commit (async discard's record cleanup).
		if cerr := fs.Close(); err == nil {
			err = cerr
		}
	}()
	if set != nil {
		if err := fs.UpdateSettings(set); err != nil {
			return err
		}
	}
	s := fs.Super().Settings
	pending, err := fs.PendingDiscardBytes()
	if err != nil {
		return err
	}
	out := policyJSON{Discard: s.Discard.String(), MetadataMin: s.MetadataMin(), MaxBytesPerCommit: s.DiscardMaxPerCommit, PendingBytes: pending}
	inspect.MaybePrintIOStats(stderr, fs, f.stats)
	if f.asJSON {
		return cli.JSON(stdout, out)
	}
	limit := "none"
	if out.MaxBytesPerCommit > 0 {
		limit = units.Human(out.MaxBytesPerCommit)
	}
	fmt.Fprintf(stdout, "discard: %s\nmetadata-min: %s\nmax-bytes-per-commit: %s\npending: %s\n", out.Discard, units.Human(out.MetadataMin), limit, units.Human(out.PendingBytes))
	return nil
}
