package main

import (
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/dedupe"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/mkfs"
	"github.com/ddfs/ddfs/pkg/progress"
	"github.com/ddfs/ddfs/pkg/transfer"
	"github.com/ddfs/ddfs/pkg/units"
)

const estimateExamples = `  dedupe-tool estimate ./backups                 # a host folder
  dedupe-tool estimate backup.img:/home          # a folder of an image
  dedupe-tool estimate --block 128K --compress zstd:3 --json vm.raw

Reads the data once for every block size, hashing on every core. Memory:
the block tables take 24 bytes per block, at most --memory (default 64M);
past it they spill as sorted runs to $TMPDIR. Read buffers add 24 MiB.
All-zero blocks count as logical bytes but not as unique ones (holes).
`

func newEstimateCmd() *cobra.Command {
	c, fl := newCmd("estimate PATH|IMAGE[:DIR]... [--block SIZE,...] [--chunking fixed|cdc] [--compress ALGO] [--json]", "what dedupe would save, per block size (changes nothing)", estimateExamples)
	blocks := fl.String("block", "4K,16K,64K,128K,1M", "fixed block sizes (powers of two 4K..8M); also the cdc average with --chunking cdc")
	chunking := fl.String("chunking", "", "fixed or cdc (default: both, cdc with a 128K average)")
	compress := fl.String("compress", "", "also estimate stored bytes compressed with ALGO (zstd[:LEVEL], s2)")
	memory := fl.String("memory", "64M", "bound of the block tables before they spill to $TMPDIR")
	asJSON := fl.Bool("json", false, "print JSON")
	quiet := fl.BoolP("quiet", "q", false, "no progress bar")
	degraded := degradedFlag(fl)
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
		if len(args) == 0 {
			return cli.Usagef("want PATH|IMAGE[:DIR]...")
		}
		o, err := estimateOptions(*blocks, *chunking, *compress, *memory)
		if err != nil {
			return err
		}
		var bar *progress.Bar // ended before the report is printed
		if f, ok := stderr.(*os.File); ok && !*quiet && cli.IsTerminal(f) {
			bar = progress.NewLabeled(f, "read")
			defer bar.Done()
			bar.EndLineOnInterrupt()
			o.Progress = bar.Add
			if total, ok := hostTotal(args); ok {
				bar.SetTotal(total)
			}
		}
		e, err := dedupe.NewEstimator(o)
		if err != nil {
			return cli.Usagef("%v", err)
		}
		for _, a := range args {
			if err := estimateOne(e, a, *degraded); err != nil {
				return err
			}
		}
		res, err := e.Result()
		if err != nil {
			return err
		}
		bar.Done()
		if *asJSON {
			return cli.JSON(stdout, res)
		}
		printEstimate(stdout, res)
		return nil
	}
	return c
}

func estimateOptions(blocks, chunking, compress, memory string) (dedupe.EstimateOptions, error) {
	var o dedupe.EstimateOptions
	var sizes []uint64
	for _, s := range strings.Split(blocks, ",") {
		n, err := units.ParseSize(s)
		if err != nil {
			return o, cli.Usagef("--block: %v", err)
		}
		sizes = append(sizes, n)
	}
	switch chunking {
	case "":
		o.Blocks, o.CDC = sizes, 128<<10
	case "fixed":
		o.Blocks = sizes
	case "cdc":
		o.CDC = sizes[0]
		if blocks == "4K,16K,64K,128K,1M" {
			o.CDC = 128 << 10
		}
	default:
		return o, cli.Usagef("--chunking: want fixed or cdc")
	}
	if compress != "" {
		c, lvl, err := mkfs.ParseCompression(compress)
		if err != nil {
			return o, cli.Usagef("--compress: %v", err)
		}
		o.Compress, o.Level = c, lvl
	}
	m, err := units.ParseSize(memory)
	if err != nil {
		return o, cli.Usagef("--memory: %v", err)
	}
	if m < 1<<20 {
		return o, cli.Usagef("--memory: want a size of at least 1M")
	}
	o.Memory = int(m)
	return o, nil
}

// estimateOne adds a host folder or file, or an image (IMAGE:DIR, or a
// file holding ddfs) to the estimate.
// hostTotal is the bytes estimate will read when every operand is a host
// folder or a plain file (a ddfs image's total is not known up front).
func hostTotal(args []string) (uint64, bool) {
	for _, a := range args {
		if img, _ := splitImage(a); img != "" {
			return 0, false
		}
		if st, err := os.Stat(a); err == nil && !st.IsDir() {
			f, err := os.Open(a)
			if err != nil {
				return 0, false
			}
			kind := mkfs.Detect(f, st.Size())
			f.Close()
			if kind == "ddfs filesystem" {
				return 0, false
			}
		}
	}
	return transfer.HostBytes(args, true, 1<<20)
}

func estimateOne(e *dedupe.Estimator, arg string, degraded bool) error {
	img, dir := splitImage(arg)
	if img == "" {
		st, err := os.Stat(arg)
		if err != nil {
			return err
		}
		if st.IsDir() {
			return e.AddDir(arg)
		}
		f, err := os.Open(arg)
		if err != nil {
			return err
		}
		defer f.Close()
		if mkfs.Detect(f, st.Size()) != "ddfs filesystem" {
			return e.Add(f)
		}
		img, dir = arg, "/"
	}
	f, err := openFS(img, false, 0, degraded)
	if err != nil {
		return err
	}
	defer f.Close()
	root := strings.TrimPrefix(path.Clean("/"+dir), "/")
	if root == "" {
		root = "."
	}
	if err := e.AddFS(f.IOFS(), root); err != nil {
		return fmt.Errorf("%s:%s: %w", img, dir, err)
	}
	return nil
}

// splitImage splits IMAGE:DIR when the text before the colon is an
// existing file (as ddfs operands; "./" forces a host path).
func splitImage(arg string) (img, dir string) {
	if spec, p, hasPath, ok := device.SplitRemote(arg); ok {
		if !hasPath || p == "" {
			p = "/"
		}
		return spec, p
	}
	i := strings.IndexByte(arg, ':')
	if i <= 0 || strings.HasPrefix(arg, "./") {
		return "", arg
	}
	if st, err := os.Stat(arg[:i]); err != nil || st.IsDir() {
		return "", arg
	}
	return arg[:i], arg[i+1:]
}

func printEstimate(w io.Writer, r *dedupe.Estimate) {
	fmt.Fprintf(w, "logical bytes: %s in %d files\n", units.Human(r.LogicalBytes), r.Files)
	fmt.Fprintf(w, "%-10s %12s %7s %12s %10s", "block", "unique", "ratio", "entries", "index")
	if len(r.Sizes) > 0 && r.Sizes[0].StoredBytes != nil {
		fmt.Fprintf(w, " %12s", "stored")
	}
	fmt.Fprintln(w)
	for _, s := range r.Sizes {
		name := units.Human(s.BlockSize)
		if s.Chunking == "cdc" {
			name = "cdc"
		}
		fmt.Fprintf(w, "%-10s %12s %6.2fx %12d %10s", name, units.Human(s.UniqueBytes), s.Ratio, s.IndexEntries, units.Human(s.IndexBytes))
		if s.StoredBytes != nil {
			fmt.Fprintf(w, " %12s", units.Human(*s.StoredBytes))
		}
		fmt.Fprintln(w)
	}
}
