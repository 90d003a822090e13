package cli

import (
	"context"
	"os"
	"os/signal"
)

// Handled returns the signals of sigs that were not ignored when the
// process started. sh starts a background job (`cmd &`) with SIGINT and
// SIGQUIT ignored and nohup ignores SIGHUP, so a Ctrl-C meant for the
// script must not reach the job; signal.Notify would un-ignore them.
func Handled(sigs ...os.Signal) []os.Signal {
	var h []os.Signal
	for _, s := range sigs {
		if !signal.Ignored(s) {
			h = append(h, s)
		}
	}
	return h
}

// Notify relays to c those of sigs that Handled keeps; with none left
// it relays nothing (signal.Notify with no signals would relay all).
func Notify(c chan<- os.Signal, sigs ...os.Signal) {
	if h := Handled(sigs...); len(h) > 0 {
		signal.Notify(c, h...)
	}
}

// NotifyContext is signal.NotifyContext for the signals Handled keeps.
func NotifyContext(parent context.Context, sigs ...os.Signal) (context.Context, context.CancelFunc) {
	h := Handled(sigs...)
	if len(h) == 0 {
		return context.WithCancel(parent)
	}
	return signal.NotifyContext(parent, h...)
}
