package cli

import (
	"runtime/debug"
)

// Release is the version of the ddfs tools; Version adds the VCS revision
// the binary was built from.
const Release = "0.15.0"

// ReleaseDate is Release's date, printed in the man pages.
const ReleaseDate = "2026-12-01"

// Version returns Release with the commit the binary was built from when
// the build recorded it ("0.15.0 (rev 1a2b3c4d5e6f, modified)").
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Release
	}
	return Release + revision(bi.Settings)
}

// revision formats the vcs.revision and vcs.modified build settings.
func revision(settings []debug.BuildSetting) string {
	var rev, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return ""
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		return " (rev " + rev + ", modified)"
	}
	return " (rev " + rev + ")"
}
