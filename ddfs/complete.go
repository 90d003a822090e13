package main

import (
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// completeTimeout bounds a completion: a big or damaged image must not
// hang the shell.
const completeTimeout = 2 * time.Second

// completeOperand completes IMAGE:PATH operands: before a colon the shell
// completes host files (images among them); after "IMG:" the entries of
// the directory the path is in, read from the image opened read-only.
func completeOperand(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	op := parseOperand(toComplete)
	if op.image == "" {
		return nil, cobra.ShellCompDirectiveDefault
	}
	// Candidates keep the text typed so far (the shell filters on it).
	typed := toComplete[len(op.image)+1:]
	typedDir, prefix := typed[:strings.LastIndexByte(typed, '/')+1], typed[strings.LastIndexByte(typed, '/')+1:]
	done := make(chan []string, 1)
	go func() { done <- listImageDir(op.image, typedDir, prefix) }()
	select {
	case names := <-done:
		return names, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	case <-time.After(completeTimeout):
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// listImageDir returns "IMG:DIR/NAME" for the entries of dir (as typed,
// relative to the root) starting with prefix, directories with a trailing
// slash. It opens the image read-only (never waiting for a writer) and
// returns nothing on any error.
func listImageDir(image, dir, prefix string) []string {
	st, err := store.Open([]string{image}, volume.Options{})
	if err != nil {
		return nil
	}
	defer st.Close()
	f, err := fsys.New(st, fsys.Options{})
	if err != nil {
		return nil
	}
	in, err := f.Resolve(abs(dir), true)
	if err != nil || !in.IsDir() {
		return nil
	}
	ents, _ := f.List(in)
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name, prefix) || (prefix == "" && strings.HasPrefix(e.Name, ".")) {
			continue
		}
		name := image + ":" + dir + e.Name
		if e.Type == format.FileTypeDir {
			name += "/"
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
