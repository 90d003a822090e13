//go:build ddfs_man

package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

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
	if err := genManTree(root, h, dir); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	return nil
}

// genManTree is doc.GenManTree (the same pages, the same file names)
// with the EXIT STATUS section man-pages(7) asks for, from the text
// --help prints under "Exit status".
func genManTree(c *cobra.Command, h *doc.GenManHeader, dir string) error {
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
			if err := genManTree(sub, h, dir); err != nil {
				return err
			}
		}
	}
	var page bytes.Buffer
	hc := *h
	if err := doc.GenMan(c, &hc, &page); err != nil {
		return err
	}
	name := strings.ReplaceAll(c.CommandPath(), " ", "-") + "." + h.Section
	return os.WriteFile(filepath.Join(dir, name), withExitStatus(page.Bytes(), ExitCodes(c)), 0o644)
}

// withExitStatus puts an EXIT STATUS section before SEE ALSO (or last),
// the text kept line for line as --help shows it.
func withExitStatus(page []byte, text string) []byte {
	var sec strings.Builder
	sec.WriteString(".SH EXIT STATUS\n.nf\n")
	for _, l := range strings.Split(strings.ReplaceAll(text, `\`, `\e`), "\n") {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			l = `\&` + l // not a roff request
		}
		sec.WriteString(l + "\n")
	}
	sec.WriteString(".fi\n\n")
	if i := bytes.Index(page, []byte(".SH SEE ALSO")); i >= 0 {
		return slices.Concat(page[:i], []byte(sec.String()), page[i:])
	}
	return append(page, sec.String()...)
}
