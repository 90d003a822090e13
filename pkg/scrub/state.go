package scrub

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
)

// state is the resume record: a small JSON file written every
// Options.Checkpoint and removed when a scrub completes. Next is the
// logical address below which every unit was scrubbed (and repaired,
// durably) by the interrupted run; Report holds its counters so far. A
// record of another set or generation is ignored: the scrub starts over.
type state struct {
	FSID       string  `json:"fsid"`
	Generation uint64  `json:"generation"`
	Next       uint64  `json:"next_logical"`
	Report     *Report `json:"report"`
}

// maxStateBytes bounds what is read of a resume record.
const maxStateBytes = 64 << 20

// saveState writes the record atomically (temporary file, rename).
func saveState(path string, st state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// loadState reads the record at path; when it belongs to rep's set and
// generation it folds its counters into rep and returns it.
func loadState(path string, rep *Report) (state, bool) {
	f, err := os.Open(path)
	if err != nil {
		return state{}, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStateBytes))
	var st state
	if err != nil || json.Unmarshal(b, &st) != nil || st.Report == nil ||
		st.FSID != rep.UUID || st.Generation != rep.Generation || len(st.Report.Devices) != len(rep.Devices) {
		return state{}, false
	}
	old := st.Report
	for i := range rep.Devices {
		if old.Devices[i].DevID != rep.Devices[i].DevID {
			return state{}, false
		}
		d := &rep.Devices[i]
		o := old.Devices[i]
		d.BytesRead, d.ErrorsFound, d.CsumErrors, d.IOErrors, d.SuperErrors = o.BytesRead, o.ErrorsFound, o.CsumErrors, o.IOErrors, o.SuperErrors
		d.ErrorsCorrected, d.ErrorsUncorrectable = o.ErrorsCorrected, o.ErrorsUncorrectable
	}
	rep.Nodes, rep.DataBytes, rep.BytesRead, rep.Seconds = old.Nodes, old.DataBytes, old.BytesRead, old.Seconds
	rep.Errors, rep.Truncated = append(rep.Errors, old.Errors...), old.Truncated
	return st, true
}

// removeState drops the record of a completed scrub.
func removeState(path string) { os.Remove(path) }
