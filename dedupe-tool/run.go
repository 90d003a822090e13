package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/dedupe"
	"github.com/ddfs/ddfs/pkg/progress"
	"github.com/ddfs/ddfs/pkg/units"
)

const runExamples = `  dedupe-tool run backup.img                     # every file, the image's block and hash
  dedupe-tool run --block 64K --json backup.img:/vm
  dedupe-tool run --dry-run backup.img           # what a run would free (an estimate)
  dedupe-tool run --trim backup.img              # then give the freed space back to the host

First, without reading data, every fixed block gets a print made of the
sector checksums already stored for it: an extent none of whose blocks
has a print found elsewhere is left alone (prefiltered_bytes; unread, not
indexed). The rest not yet in indexed extents is read and hashed; a block
seen before becomes a reference to its extent, a new one gets its own
indexed extent (cut off in place when it starts an extent no other file
uses: adopted_bytes; else written again), and old extents are freed once
nothing refers to them.
On an image with strong sector sums (mkfs.ddfs --csum blake3 or sha256)
the stored sums stand for the data: a block whose sums equal those of a
block read earlier in the run holds the same bytes and is shared without
being read (sum_shared_bytes; the first copy is still read, verified and
hashed). crc32c and xxhash64 sums only detect damage, so there every
block is read (sum_shared_bytes 0). With dedupe_verify set, every block
is read and every match byte-compared. With the xxh3 dedupe hash every
match of a block read is byte-compared (strong sums still share unread:
the matched extent's own stored sums must equal the block's).
The blocks to read are read, verified and hashed ahead on a second core
while the tree work of the ones before goes on (ahead_bytes; the prints'
walk knows where they lie).
(CDC chunks are not aligned to sectors: with --chunking cdc every block is
read.) Transactions of at most 64 MiB of data or 48 changed metadata
nodes: a kill leaves a consistent image, and running again continues (it
frees nothing twice).

Memory is bounded: data is read and rewritten 128 KiB at a time (one
block when bigger), 32 metadata nodes are cached, the files to visit take
8 bytes a file (a whole image's found in the prints' walk of the fs
tree, a folder's by walking it; the files visited in inode order),
prints take 16 bytes a
block, at most 8 MiB (images with more blocks take more passes over the
metadata; the extents to read are found by the prints' own memory),
blocks the sums cannot tell 8 bytes an extent, strong sums learned 120
bytes a distinct block, at most 4 MiB (blocks past it are read), and the
read-ahead 8 blocks' worth (1 MiB at 128 KiB; up to 512 smaller blocks)
and 24 bytes a block it plans, at most 3 MiB (blocks past it are read in
turn). Peak RSS 22 MB on the 2.0 GB bench set D2 in 60,148 files.

What a run frees stays allocated in the image file until it is discarded:
the run ends by measuring the free space the image files still hold
(untrimmed_bytes; block devices cannot tell) and, from 1 MiB on, says how
to give it back (trimtool IMAGE, or run --trim; -q: not said). --trim then
trims as trimtool does, with its check of the allocation metadata against
every tree: where they disagree the disputed space is kept, listed, and
the exit is 4 (the dedupe stays done). A dry run trims nothing.
`

func newRunCmd() *cobra.Command {
	c, fl := newCmd("run IMAGE[:DIR] [--block SIZE] [--chunking fixed|cdc] [--min-size SIZE] [--trim] [--dry-run] [--json]", "dedupe data already written (bounded transactions, rerunnable)", runExamples)
	c.Annotations = map[string]string{cli.ExitCodesKey: runExitCodes}
	block := fl.String("block", "", "dedupe block (power of two 4K..8M; default: the image's)")
	chunking := fl.String("chunking", "", "fixed or cdc (default: the image's)")
	minSize := fl.String("min-size", "0", "leave files smaller than SIZE alone")
	trimAfter := fl.Bool("trim", false, "then discard the image's free space as trimtool does (with --dry-run: nothing)")
	dry := fl.Bool("dry-run", false, "change nothing: estimate the bytes a run would free")
	asJSON := fl.Bool("json", false, "print JSON")
	quiet := fl.BoolP("quiet", "q", false, "no progress bar, no hint to trim")
	verbose := fl.BoolP("verbose", "v", false, "also print where the time went and what was read (with --trim: per device)")
	degraded := degradedFlag(fl)
	var stats cli.Stats
	cli.StatsVar(fl, &stats, "per-device I/O")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
		if len(args) != 1 {
			return cli.Usagef("want one IMAGE[:DIR]")
		}
		if os.Getenv("GOGC") == "" {
			debug.SetGCPercent(runGCPercent)
		}
		floor := make([]byte, runHeapFloor) // first, so fresh pages: never touched
		defer runtime.KeepAlive(floor)
		img, dir := splitImage(args[0])
		if img == "" {
			img, dir = args[0], "/"
		}
		var o dedupe.RunOptions
		o.Dir = dir
		if *block != "" {
			n, err := units.ParseSize(*block)
			if err != nil {
				return cli.Usagef("--block: %v", err)
			}
			o.Block = n
		}
		ms, err := units.ParseSize(*minSize)
		if err != nil {
			return cli.Usagef("--min-size: %v", err)
		}
		o.MinSize = ms
		if *chunking != "" && *chunking != "fixed" && *chunking != "cdc" {
			return cli.Usagef("--chunking: want fixed or cdc")
		}
		var bar *progress.Bar // ended before the report is printed
		if f, ok := stderr.(*os.File); ok && !*quiet && cli.IsTerminal(f) {
			bar = progress.NewLabeled(f, "processed")
			defer bar.Done()
			bar.EndLineOnInterrupt()
			o.Progress = bar.Add
		}
		f, err := openFSNodes(img, !*dry, runBatchBytes, runBatchNodes, *degraded)
		if err != nil {
			return err
		}
		f.Store().LimitNodeCache(runCacheNodes)
		o.Window = runWindow
		s := f.Store().Super().Settings
		o.CDC, o.Hash = s.DedupeCDC, s.DedupeHash
		if *chunking != "" {
			o.CDC = *chunking == "cdc"
		}
		if !o.Hash.ValidDedupeHash() {
			o.Hash = format.CsumSHA256 // 0 is sha256 (FORMAT.md §3.2)
		}
		var res *dedupe.RunResult
		if *dry {
			res, err = dedupe.DryRun(f, o)
		} else {
			res, err = dedupe.Run(f, o)
		}
		if err := finish(f, err, stderr, string(stats)); err != nil {
			return err
		}
		bar.Done()
		free, ferr := &freeReport{}, error(nil)
		if !*dry {
			free, ferr = afterRun(img, stderr, freeOptions{trim: *trimAfter, quiet: *quiet, degraded: *degraded, asJSON: *asJSON})
		}
		if *asJSON {
			if err := cli.JSON(stdout, struct {
				*dedupe.RunResult
				*freeReport
			}{res, free}); err != nil {
				return err
			}
			return ferr
		}
		verb := "freed"
		if *dry {
			verb = "would free"
		}
		fmt.Fprintf(stdout, "%s %s in %.2fs: %d files, %d blocks shared, %s rewritten, %d index entries\n",
			verb, units.Human(res.FreedBytes), res.Seconds, res.Files, res.ExtentsShared, units.Human(res.RewrittenBytes), res.IndexEntries)
		if *verbose && !*dry {
			fmt.Fprintf(stdout, "  listing %.2fs, prefilter %.2fs, dedupe %.2fs; read %s (%s ahead on a second core), indexed in place %s, shared unread on stored strong sums %s, left unread by the prefilter %s\n",
				res.ListSeconds, res.PrefilterSeconds, res.DedupeSeconds, units.Human(res.RewrittenBytes-res.SumSharedBytes), units.Human(res.AheadBytes),
				units.Human(res.AdoptedBytes), units.Human(res.SumSharedBytes), units.Human(res.PrefilteredBytes))
		}
		free.print(stdout, stderr, img, res.FreedBytes, *verbose, *quiet)
		return ferr
	}
	return c
}

// A run's memory (the bound --help states): measured on 760 MB of 45,916
// files (4 x Go tree + VM-like files) peak RSS went 89 MB -> 20 MB and
// time 6.3 s -> 7-12 s on a loaded machine with these, against 64 MiB
// windows of 8 MiB, 4096 dirty and 2048 cached nodes; a soft memory
// limit instead (16-24 MiB) made the collector thrash: 20-180 s.
const (
	runGCPercent  = 20       // of the live heap (~6 MiB) and the floor: collect every ~3 MiB
	runBatchBytes = 64 << 20 // data per transaction
	runBatchNodes = 48       // dirty metadata nodes per transaction (768 KiB; 64 was 0.5 MB more peak RSS, no faster)
	runCacheNodes = 32       // clean metadata nodes kept
	runWindow     = 128 << 10
)

// runHeapFloor is heap the collector counts and nothing touches (no
// RSS): GOGC 20 of a ~6 MiB live heap alone would collect every ~1
// MiB of garbage, 2.5x as often; a run took 20% longer that way, for
// 1.8 MB less peak RSS. (Until 2026-12-04 an 8 MiB buffer of the
// estimate, made at start, played this part unnoticed.)
const runHeapFloor = 8 << 20
