package inspect

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/units"
	"github.com/ddfs/ddfs/pkg/volume"
)

// DeviceIO is volume.DeviceIO, under the name the commands use.
type DeviceIO = volume.DeviceIO

// IOStats collects the counters of every device of fs.
func IOStats(fs *store.FS) []DeviceIO { return fs.Vol.IO(fs.DevItems()) }

// DevicesIO is volume.DevicesIO (devices taken from a closed volume).
func DevicesIO(devs []*volume.Dev, devItems []*format.DevItem) []DeviceIO {
	return volume.DevicesIO(devs, devItems)
}

// PrintIOStats writes one line per device.
func PrintIOStats(w io.Writer, stats []DeviceIO) {
	for _, s := range stats {
		fmt.Fprintf(w, "io: devid %d %s: reads %d (%s), writes %d (%s), flushes %d, discards %d (%s), seeks %d; modeled %.3f s\n",
			s.DevID, s.Path, s.Reads, units.Human(s.ReadBytes), s.Writes, units.Human(s.WriteBytes), s.Flushes, s.Discards, units.Human(s.DiscardBytes), s.Seeks, s.ModeledSeconds)
	}
}

// PrintFallbacks adds the --stats line that says a command's new chunks
// went outside the allocation policy's preferred devices (never silent).
func PrintFallbacks(w io.Writer, n int, policy string) {
	if n > 0 {
		fmt.Fprintf(w, "alloc: %d new chunk(s) placed outside the %s policy's preferred devices (ddfs df lists them)\n", n, policy)
	}
}

// Stats is what --stats reports after a command: the I/O per device, the
// new chunks placed outside the allocation policy's preference, and the
// copies self-healing reads rewrote.
type Stats struct {
	IO        []DeviceIO      `json:"io"`
	Fallbacks int             `json:"fallback_chunks"`
	Heal      store.HealStats `json:"heal"`
	// Policy names the allocation policy in the text form.
	Policy string `json:"-"`
}

// StatsOf collects the --stats of fs (still open).
func StatsOf(fs *store.FS) Stats {
	return Stats{IO: IOStats(fs), Fallbacks: fs.FallbackChunks(), Heal: fs.HealStats(),
		Policy: fs.Super().Settings.AllocPolicy.String()}
}

// PrintStats writes s on w in format: "" nothing, "json" one JSON object
// on one line (for scripts), anything else lines of text.
func PrintStats(w io.Writer, format string, s Stats) {
	switch format {
	case "":
	case "json":
		b, _ := json.Marshal(s)
		fmt.Fprintln(w, string(b))
	default:
		PrintIOStats(w, s.IO)
		PrintFallbacks(w, s.Fallbacks, s.Policy)
		PrintHealStats(w, s.Heal)
	}
}

// MaybePrintIOStats prints the --stats of fs on w in format ("" off) and
// returns the I/O (for --json "io"); nil when off.
func MaybePrintIOStats(w io.Writer, fs *store.FS, format string) []DeviceIO {
	if format == "" {
		return nil
	}
	st := StatsOf(fs)
	PrintStats(w, format, st)
	return st.IO
}
