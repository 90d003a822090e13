package main

import (
	"io"
	"sort"
	"strings"
)

// inspectCmds are the subcommands of `ddfs inspect` (as btrfs
// inspect-internal), one file each.
var inspectCmds = map[string]func(args []string, stdout io.Writer) error{
	"dump-super": cmdDumpSuper,
	"dump-tree":  cmdDumpTree,
	"map":        cmdMap,
	"inode":      cmdInspectInode,
}

// cmdInspect is `ddfs inspect dump-super|dump-tree|map|inode ...`.
func cmdInspect(args []string, stdout, _ io.Writer) error {
	names := make([]string, 0, len(inspectCmds))
	for n := range inspectCmds {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(args) == 0 {
		return usageErr("want %s", strings.Join(names, "|"))
	}
	c, ok := inspectCmds[args[0]]
	if !ok {
		return usageErr("unknown inspect command %q (want %s)", args[0], strings.Join(names, "|"))
	}
	return c(args[1:], stdout)
}
