// Command dedupe-tool manages dedupe of a ddfs image: inband settings and
// status, estimates on any data, offline dedupe and the index.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/ddfs/ddfs/pkg/cli"
)

func main() {
	cli.SoftMemoryLimit(160 << 20)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

var commands = map[string]func(args []string, stdout, stderr io.Writer) error{
	"status":   cmdStatus,
	"enable":   cmdEnable,
	"disable":  cmdDisable,
	"estimate": cmdEstimate,
	"run":      cmdRun,
	"index":    cmdIndex,
}

const usage = `Usage: dedupe-tool COMMAND [options] IMAGE

Commands:
  status [--json] IMAGE                         logical/physical bytes, savings, index size
  enable [--block SIZE] [--hash ALGO] IMAGE     dedupe new writes (the index persists in the image)
  disable IMAGE                                 stop deduping new writes (shared data stays shared)
  estimate PATH|IMAGE[:DIR]... [--block SIZE,...] [--chunking fixed|cdc] [--compress ALGO] [--json]
                                                what dedupe would save, per block size (changes nothing;
                                                block tables bounded by --memory, default 64M, then spilled)
  run IMAGE[:DIR] [--block SIZE] [--chunking fixed|cdc] [--min-size SIZE] [--dry-run] [--json]
                                                dedupe data already written (bounded transactions, rerunnable)
  index rebuild IMAGE                           the dedupe index again from the extents
  index prune IMAGE --max-entries N             keep the N entries most likely to hit

Examples:
  dedupe-tool status --json backup.img
  dedupe-tool enable --block 64K --hash blake3 backup.img
  dedupe-tool estimate --json ./backups
  dedupe-tool run --json backup.img
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return cli.ExitUsage
		}
		return cli.ExitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		return cli.Report(stderr, "dedupe-tool", cli.Usagef("unknown command %q", args[0]))
	}
	return cli.Report(stderr, "dedupe-tool: "+args[0], c(args[1:], stdout, stderr))
}
