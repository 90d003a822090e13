package inspect

import (
	"fmt"
	"io"

	"github.com/ddfs/ddfs/pkg/store"
)

// ReportHeals makes every bad copy fs's reads meet print one line on w,
// "PROG: IMAGE: <what was found and done>", as the tools report them.
func ReportHeals(w io.Writer, prog, image string, fs *store.FS) {
	fs.OnHeal(func(h store.Heal) { fmt.Fprintf(w, "%s: %s: %s\n", prog, image, h) })
}

// PrintHealStats adds the --stats line of self-healing reads (none when
// no bad copy was met).
func PrintHealStats(w io.Writer, s store.HealStats) {
	if s.Found > 0 {
		fmt.Fprintf(w, "heal: %d bad copies met, %d rewritten from a good copy\n", s.Found, s.Repaired)
	}
}
