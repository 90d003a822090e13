package main

import (
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/ddfs/ddfs/pkg/cli"
)

// cleanup removes the image files this run created when it is
// interrupted (SIGINT, SIGTERM), as a failed run does; a file or device
// that was there before is left as it is, as mkfs.btrfs leaves it (what
// it held is gone already, and it was not ours to delete).
type cleanup struct {
	mu      sync.Mutex
	created []string
	stop    chan os.Signal
}

// onInterrupt starts watching for the signals; done stops.
func onInterrupt() *cleanup {
	c := &cleanup{stop: make(chan os.Signal, 1)}
	cli.Notify(c.stop, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig, ok := <-c.stop
		if !ok {
			return
		}
		c.mu.Lock() // held until the process dies: no file is made after
		for _, p := range c.created {
			os.Remove(p)
		}
		// Die of the signal, as the shell expects of an interrupted tool.
		signal.Reset(sig)
		syscall.Kill(os.Getpid(), sig.(syscall.Signal))
		select {}
	}()
	return c
}

// add records an image file the run created.
func (c *cleanup) add(p string) {
	c.mu.Lock()
	c.created = append(c.created, p)
	c.mu.Unlock()
}

func (c *cleanup) done() {
	signal.Stop(c.stop)
	close(c.stop)
}
