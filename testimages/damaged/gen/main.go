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
	if err := gen(dir); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func gen(dir string) error {
	for _, k := range corpus.Kinds {
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
