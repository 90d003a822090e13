package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// ManDirEnv names the folder `make man` has each tool write its man pages
// to (one page per command, from the same text as --help); the tool then
// does nothing else.
const ManDirEnv = "DDFS_GEN_MAN"

// genMan writes root's man pages (section 8, as mkfs(8) and fsck(8)).
func genMan(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root.DisableAutoGenTag = true // pages stay the same from build to build
	date, err := time.Parse(time.DateOnly, ReleaseDate)
	if err != nil {
		return err
	}
	h := &doc.GenManHeader{Section: "8", Date: &date, Source: "ddfs " + Release, Manual: "ddfs tools"}
	if err := doc.GenManTree(root, h, dir); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	return nil
}
