// Package cli holds what the five commands share: error lines in the
// coreutils style, usage errors, JSON output and size formatting.
package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/ddfs/ddfs/pkg/device"
	"golang.org/x/term"
)

// Exit codes shared by ddfs, mkfs.ddfs, trimtool and dedupe-tool
// (fsck.ddfs uses fsck(8)'s).
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
	// ExitUncorrected is fsck(8)'s 4, "problems left uncorrected": a
	// writing tool that found damage it kept its hands off (run fsck).
	ExitUncorrected = 4
)

// UsageError marks a bad command line (exit 2).
type UsageError struct {
	Msg string
	// Suggestions are the commands nearest an unknown one ("ls" for "lss").
	Suggestions []string
}

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error { return &UsageError{Msg: fmt.Sprintf(format, args...)} }

// CodeError ends a command with its own exit code (diff: 1 when files
// differ, 2 on trouble); Err, if set, is reported as any error is, and a
// nil Err prints nothing (the command has said what it had to).
type CodeError struct {
	Code int
	Err  error
}

func (e *CodeError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *CodeError) Unwrap() error { return e.Err }

// Report prints "prog: err" on one line and returns the exit code.
func Report(w io.Writer, prog string, err error) int {
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, pflag.ErrHelp) {
		return ExitOK
	}
	var ce *CodeError
	if errors.As(err, &ce) {
		if ce.Err != nil {
			Report(w, prog, ce.Err)
		}
		return ce.Code
	}
	msg := strings.ReplaceAll(Plain(err), "\n", "; ")
	fmt.Fprintf(w, "%s: %s\n", prog, msg)
	var ue *UsageError
	if errors.As(err, &ue) {
		// "ddfs: cp" names the command: "Try 'ddfs cp --help'".
		fmt.Fprintf(w, "Try '%s --help' for more information.\n", strings.ReplaceAll(prog, ":", ""))
		return ExitUsage
	}
	return ExitError
}

// JSON writes v indented, with a trailing newline.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Plain shortens "open x: stat x: no such file or directory" to the
// coreutils form "x: No such file or directory" for the errors users
// cause most: a missing path or one they may not open.
func Plain(err error) string {
	var pe *fs.PathError
	var errno syscall.Errno
	if errors.As(err, &pe) && errors.As(pe.Err, &errno) {
		m := errno.Error()
		msg := pe.Path + ": " + strings.ToUpper(m[:1]) + m[1:]
		var re *device.RemoteError
		if errors.As(pe.Err, &re) {
			msg += " (on " + re.Device + ")" // which server failed
		}
		return msg
	}
	return err.Error()
}

// IsTerminal reports whether f is a terminal (progress lines are drawn
// only there).
func IsTerminal(f *os.File) bool {
	// A character device is not enough: /dev/null is one.
	return term.IsTerminal(int(f.Fd()))
}
