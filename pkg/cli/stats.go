package cli

import (
	"fmt"

	"github.com/spf13/pflag"
)

// Stats is the value of --stats[=text|json]: "" (off), "text" or "json".
// A bare --stats means text, as it did when the flag was a boolean.
type Stats string

// Set implements pflag.Value.
func (s *Stats) Set(v string) error {
	switch v {
	case "text", "json":
		*s = Stats(v)
		return nil
	case "true": // --stats=true, from the boolean days
		*s = "text"
		return nil
	case "false":
		*s = ""
		return nil
	}
	return fmt.Errorf("want text or json")
}

// String implements pflag.Value.
func (s *Stats) String() string { return string(*s) }

// Type implements pflag.Value.
func (s *Stats) Type() string { return "text|json" }

// StatsVar defines --stats[=text|json] on fl; what is the I/O it reports.
func StatsVar(fl *pflag.FlagSet, s *Stats, what string) {
	f := fl.VarPF(s, "stats", "", "print "+what+" on stderr: text, or one JSON object with --stats=json")
	f.NoOptDefVal = "text"
}
