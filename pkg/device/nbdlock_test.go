package device_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/device/nbdkittest"
)

// TestNBDSecondWriterRefused: NBD has no locks, so an export is kept to
// one writer by the server (README: nbdkit --filter=limit, qemu-nbd's
// default --shared=1). A second writer is refused with ErrBusy and a
// message that says why; once the first has gone, a writer gets in.
func TestNBDSecondWriterRefused(t *testing.T) {
	nbdkittest.Need(t)
	srv := nbdkittest.Start(t, true, "--filter=limit", "memory", "size=16M", "limit=1")
	first, err := device.Open(srv.URL, device.OpenOptions{Mode: device.ReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	_, err = device.Open(srv.URL, device.OpenOptions{Mode: device.ReadWrite})
	if !errors.Is(err, device.ErrBusy) || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second writer: %v, want ErrBusy naming the export", err)
	}
	first.Close()
	for i := 0; ; i++ {
		d, err := device.Open(srv.URL, device.OpenOptions{Mode: device.ReadWrite})
		if err == nil {
			d.Close()
			return
		}
		if i == 50 {
			t.Fatalf("writer after the first closed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
