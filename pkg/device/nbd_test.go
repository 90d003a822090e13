package device_test

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/device/nbdkittest"
)

func openRW(t *testing.T, spec string) device.Device {
	t.Helper()
	d, err := device.Open(spec, device.OpenOptions{Mode: device.ReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestNBDRoundTrip: over TCP and a unix socket, a write larger than one
// request's payload (split and pipelined), a run of zeroes (WRITE_ZEROES)
// and a read that spans both come back byte for byte; reads clip at the
// export's end like a file's; Flush and Discard succeed.
func TestNBDRoundTrip(t *testing.T) {
	for _, unix := range []bool{false, true} {
		srv := nbdkittest.Start(t, unix, "memory", "size=80M")
		d := openRW(t, srv.URL)
		if d.Size() != 80<<20 || d.Name() != srv.URL {
			t.Fatalf("size %d name %q", d.Size(), d.Name())
		}
		data := make([]byte, 40<<20)
		rand.New(rand.NewSource(1)).Read(data)
		if n, err := d.WriteAt(data, 4096); err != nil || n != len(data) {
			t.Fatalf("write: %d %v", n, err)
		}
		zero := make([]byte, 1<<20)
		if _, err := d.WriteAt(zero, 8192); err != nil {
			t.Fatal(err)
		}
		copy(data[4096:], zero)
		got := make([]byte, len(data))
		if n, err := d.ReadAt(got, 4096); err != nil || n != len(got) || !bytes.Equal(got, data) {
			t.Fatalf("read back: %d %v equal=%v", n, err, bytes.Equal(got, data))
		}
		tail := make([]byte, 8192)
		if n, err := d.ReadAt(tail, d.Size()-4096); n != 4096 || err == nil {
			t.Fatalf("read past end: %d %v", n, err)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := d.Discard(1<<20, 4<<20); err != nil {
			t.Fatal(err)
		}
		if _, err := d.WriteAt([]byte{1}, d.Size()); !errors.Is(err, device.ErrOutOfRange) {
			t.Fatalf("write past end: %v", err)
		}
	}
}

// TestNBDFileTrim: a discard on the file plugin punches the backing
// file: its allocated blocks drop by at least the discarded bytes.
func TestNBDFileTrim(t *testing.T) {
	back := filepath.Join(t.TempDir(), "back.img")
	if err := os.WriteFile(back, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Truncate(back, 64<<20)
	srv := nbdkittest.Start(t, false, "file", "file="+back)
	d := openRW(t, srv.URL)
	data := bytes.Repeat([]byte{0xa5}, 16<<20)
	if _, err := d.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	d.Flush()
	before := blocks(t, back)
	if err := d.Discard(0, 16<<20); err != nil {
		t.Fatal(err)
	}
	d.Flush()
	if after := blocks(t, back); before-after < 16<<20 {
		t.Fatalf("allocated %d -> %d after discarding 16 MiB", before, after)
	}
}

func blocks(t *testing.T, p string) int64 {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// TestNBDServerErrors: an error reply fails the request with the
// server's errno (errors.Is works) and the device's name; the connection
// stays usable once the server stops failing.
func TestNBDServerErrors(t *testing.T) {
	inject := filepath.Join(t.TempDir(), "inject")
	srv := nbdkittest.Start(t, true, "--filter=error", "memory", "size=16M",
		"error=ENOSPC", "error-pwrite-rate=100%", "error-pwrite-file="+inject)
	d := openRW(t, srv.URL)
	os.WriteFile(inject, nil, 0o644)
	_, err := d.WriteAt(bytes.Repeat([]byte{1}, 4096), 0)
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("write with errors on: %v", err)
	}
	os.Remove(inject)
	if _, err := d.WriteAt(bytes.Repeat([]byte{2}, 4096), 0); err != nil {
		t.Fatalf("write after errors stopped: %v", err)
	}
}

// TestNBDServerKilled: requests to a dead server fail at once with a
// clear error, and a silent one times out instead of hanging.
func TestNBDServerKilled(t *testing.T) {
	t.Setenv(device.NBDTimeoutEnv, "2s")
	srv := nbdkittest.Start(t, false, "memory", "size=16M")
	d := openRW(t, srv.URL)
	srv.Kill()
	start := time.Now()
	_, err := d.ReadAt(make([]byte, 4096), 0)
	if err == nil || !strings.Contains(err.Error(), srv.URL) || time.Since(start) > 5*time.Second {
		t.Fatalf("read from killed server: %v after %v", err, time.Since(start))
	}
	if _, err2 := d.WriteAt(make([]byte, 4096), 0); err2 == nil {
		t.Fatal("write after the connection died succeeded")
	}
	if _, err := device.Open(srv.URL, device.OpenOptions{}); err == nil {
		t.Fatal("open with no server succeeded")
	}
}

// TestNBDReadOnlyExport: a writer is refused by name on an export the
// server offers read-only; a reader gets in.
func TestNBDReadOnlyExport(t *testing.T) {
	srv := nbdkittest.Start(t, false, "-r", "memory", "size=16M")
	if _, err := device.Open(srv.URL, device.OpenOptions{Mode: device.ReadWrite}); !errors.Is(err, device.ErrReadOnly) {
		t.Fatalf("open rw of a read-only export: %v", err)
	}
	d, err := device.Open(srv.URL, device.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
}
