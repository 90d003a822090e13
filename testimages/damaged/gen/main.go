// Command gen writes the damaged-image corpus (testimages/damaged): for
// each kind of damage in corpus.Kinds, its images (NAME.N.img.gz) and a
// golden file (NAME.golden) with the problem codes fsck finds before
// repair, after -p and after -y. Review the golden diffs before committing
// them; damaged_test.go holds fsck to them.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ddfs/ddfs/testimages/damaged/corpus"
)

func main() {
	dir := "testimages/damaged"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	// Further arguments name the only kinds to write: the images of the
	// others are not byte-reproducible, so a new kind leaves them alone.
	only := map[string]bool{}
	for _, n := range os.Args[min(len(os.Args), 2):] {
		only[n] = true
	}
	if err := gen(dir, only); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func gen(dir string, only map[string]bool) error {
	for _, k := range corpus.Kinds {
		if len(only) > 0 && !only[k.Name] {
			continue
		}
		devs, err := corpus.Build(k)
		if err != nil {
			return err
		}
		g, err := corpus.Measure(devs)
		if err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
		if len(g.Before) == 0 {
			return fmt.Errorf("%s: fsck finds nothing: the damage missed", k.Name)
		}
		if err := corpus.WriteImages(dir, devs); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, k.Name+".golden"), []byte(g.Format(k)), 0o644); err != nil {
			return err
		}
		fmt.Printf("%-28s before %v  -p %v  -y %v\n", k.Name, g.Before, g.AfterPreen, g.AfterRepair)
	}
	return nil
}
