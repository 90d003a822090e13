// Command ddfs works on a ddfs filesystem without mounting it.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/ddfs/ddfs/pkg/cli"
)

// command is one subcommand; each lives in its own file.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{
	"info":    {"show superblock, devices, chunks and tree roots", cmdInfo},
	"df":      {"show space by type/profile and by device", cmdDF},
	"ls":      {"list directory contents", cmdLs},
	"cat":     {"print files", cmdCat},
	"stat":    {"show inode details (--json)", cmdStat},
	"cp":      {"copy into, out of, or inside an image", cmdCp},
	"mkdir":   {"make directories", cmdMkdir},
	"rm":      {"remove files or directories", cmdRm},
	"mv":      {"move or rename inside an image", cmdMv},
	"ln":      {"make hard or symbolic links", cmdLn},
	"touch":   {"create files or set their times to now", cmdTouch},
	"chmod":   {"change permission bits", cmdChmod},
	"chown":   {"change owner and group", cmdChown},
	"du":      {"show space used by files", cmdDu},
	"xattr":   {"get, set, list or remove extended attributes", cmdXattr},
	"tar-in":  {"extract a tar archive from stdin into an image", cmdTarIn},
	"tar-out": {"write an image tree as a tar archive to stdout", cmdTarOut},
	"prop":    {"get or set properties: dedupe, compression, alloc-policy, discard", cmdProp},
	"device":  {"device usage, set properties, add, remove, replace or resize a device", cmdDevice},
	"balance": {"convert chunk profiles (-d data, -m metadata)", cmdBalance},
	"scrub":   {"read and verify every copy; --repair rewrites bad ones", cmdScrub},
	"inspect": {"dump-super, dump-tree, map, inode: on-disk structures (as btrfs inspect-internal)", cmdInspect},
}

func main() {
	cli.SoftMemoryLimit(160 << 20)
	stop := cli.Profile()
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return cli.ExitUsage
		}
		return cli.ExitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		return cli.Report(stderr, "ddfs", cli.Usagef("unknown command %q", args[0]))
	}
	return cli.Report(stderr, "ddfs: "+args[0], c.run(args[1:], stdout, stderr))
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: ddfs COMMAND [options] IMAGE[:PATH]...\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nIMAGE is any device of the set; the others are found next to it.\nRun 'ddfs COMMAND --help' for the options of a command.\n\nExamples:\n  ddfs cp -r ./tree disk.img:/\n  ddfs ls -l disk.img:/tree\n  ddfs cat disk.img:/tree/README\n  ddfs cp -a disk.img:/tree ./out\n  ddfs tar-out disk.img | tar -tf -\n  ddfs info disk.img\n  ddfs df --json disk.img\n")
}
