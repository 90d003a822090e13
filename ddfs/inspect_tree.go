package main

import (
	"encoding/json"
	"fmt"
	"github.com/spf13/cobra"
	"io"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/inspect"
)

// cmdDumpTree is `ddfs inspect dump-tree IMAGE [--tree NAME] [--logical
// N]`: every node of a tree (or one node) with its decoded items; --json
// prints one JSON object per node and line.
func newDumpTreeCmd() *cobra.Command {
	c, fl, of := newCmd("dump-tree [--tree NAME] [--logical N] [--json] IMAGE", "print the nodes of a tree", "  ddfs inspect dump-tree --tree fs disk.img\n  ddfs inspect dump-tree --logical 30408704 --json disk.img\n")
	tree := fl.String("tree", "fs", "the tree: chunk, extent, fs, csum, dedupe, discard, ... or its number")
	at := fl.Uint64("logical", 0, "dump only the node at this logical address")
	asJSON := fl.Bool("json", false, "print JSON, one node per line")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout := c.OutOrStdout()
		fs, done, err := of.openOnly(args)
		if err != nil {
			return err
		}
		defer done()
		id, err := inspect.ParseTree(*tree)
		if err != nil {
			return usageErr("%v", err)
		}
		enc := json.NewEncoder(stdout)
		return inspect.DumpTree(fs, id, *at, func(n inspect.NodeDump) error {
			if *asJSON {
				return enc.Encode(n)
			}
			printNode(stdout, n)
			return nil
		})
	}
	return c
}

func printNode(w io.Writer, n inspect.NodeDump) {
	if n.Error != "" {
		fmt.Fprintf(w, "%s tree node %d: %s\n", n.Tree, n.Logical, n.Error)
		return
	}
	kind := "leaf"
	if n.Level > 0 {
		kind = "node"
	}
	fmt.Fprintf(w, "%s %d level %d generation %d owner %s items %d\n", kind, n.Logical, n.Level, n.Generation, n.Owner, len(n.Items)+len(n.Ptrs))
	for _, p := range n.Ptrs {
		fmt.Fprintf(w, "  key %v block %d gen %d\n", p.Key, p.Logical, p.Generation)
	}
	for i, it := range n.Items {
		fmt.Fprintf(w, "  item %d key %v %s size %d", i, it.Key, it.Type, it.Size)
		switch {
		case it.Error != "":
			fmt.Fprintf(w, ": %s", it.Error)
		case it.Value != nil:
			fmt.Fprintf(w, " %s", valueText(it.Value))
		}
		fmt.Fprintln(w)
	}
}

// valueText prints a decoded item on one line.
func valueText(v any) string {
	if in, ok := v.(*format.InodeItem); ok {
		return fmt.Sprintf("mode %o nlink %d size %d nbytes %d seq %d", in.Mode, in.Nlink, in.Size, in.NBytes, in.Seq)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}
