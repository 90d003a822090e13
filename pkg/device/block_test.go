//go:build linux

package device

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loopDevice attaches image to a loop device, or skips the test when that
// is impossible (not root, no losetup, no loop support).
func loopDevice(t *testing.T, image string, args ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loop devices need root")
	}
	if _, err := exec.LookPath("losetup"); err != nil {
		t.Skip("losetup not found")
	}
	out, err := exec.Command("losetup", append(append([]string{"-f", "--show"}, args...), image)...).CombinedOutput()
	if err != nil {
		t.Skipf("losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	return dev
}

func TestBlockDevice(t *testing.T) {
	const size = 64 << 20
	image := filepath.Join(t.TempDir(), "loop.img")
	if err := os.WriteFile(image, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(image, size); err != nil {
		t.Fatal(err)
	}
	dev := loopDevice(t, image)
	if !IsBlockDevice(dev) {
		t.Fatalf("%s is not a block device", dev)
	}

	d, err := Open(dev, OpenOptions{Mode: ReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	bd, ok := d.(*blockDevice)
	if !ok {
		t.Fatalf("Open gave %T, want *blockDevice", d)
	}
	if d.Size() != size {
		t.Fatalf("Size = %d, want %d", d.Size(), size)
	}
	if _, err := bd.queueAttr("rotational"); err != nil {
		t.Fatalf("rotational: %v", err)
	}
	_ = PropsOf(d).Rotational

	data := pattern(1<<20, 11)
	const off = 8 << 20
	if _, err := d.WriteAt(data, off); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, d, off, len(data)); !bytes.Equal(got, data) {
		t.Fatal("read back differs")
	}
	raw, err := os.ReadFile(image)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw[off:off+len(data)], data) {
		t.Fatal("data did not reach the backing file")
	}
	if _, err := d.WriteAt([]byte{1}, size); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("write past end: %v", err)
	}

	switch err := d.Discard(off, int64(len(data))); {
	case errors.Is(err, ErrNotSupported):
		t.Log("discard not supported here")
	case err != nil:
		t.Fatal(err)
	default:
		if got := readAll(t, d, off, len(data)); !bytes.Equal(got, make([]byte, len(data))) {
			t.Fatal("loop discard did not zero the range")
		}
	}

	// A second writer fails at once: O_EXCL refuses, we name the holder.
	start := time.Now()
	_, err = Open(dev, OpenOptions{Mode: ReadWrite})
	if want := dev + " is in use by this process"; !errors.Is(err, ErrBusy) || err == nil || err.Error() != want {
		t.Fatalf("second writer: %v, want %q", err, want)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("second writer waited")
	}
	if _, err := Open(dev, OpenOptions{Mode: ReadOnly}); !errors.Is(err, ErrBusy) {
		t.Fatalf("reader during writer: %v, want ErrBusy", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dev, OpenOptions{Mode: ReadOnly})
	if err != nil {
		t.Fatalf("reader after close: %v", err)
	}
	r.Close()
}

// A partition's queue attributes live on the parent disk in sysfs.
func TestBlockPartitionSysfs(t *testing.T) {
	image := makePartitioned(t, "gpt")
	dev := loopDevice(t, image, "-P")
	part := dev + "p2"
	for i := 0; i < 50 && !IsBlockDevice(part); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if !IsBlockDevice(part) {
		t.Skipf("%s did not appear", part)
	}
	d, err := Open(part, OpenOptions{Mode: ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Size() != 2<<20 {
		t.Fatalf("Size = %d, want %d", d.Size(), 2<<20)
	}
	if _, err := d.(*blockDevice).queueAttr("rotational"); err != nil {
		t.Fatalf("rotational of a partition: %v", err)
	}
}

// queueAttr on a fake sysfs: a partition's missing queue dir falls back to
// the parent disk's, found through the /sys/dev/block symlink.
func TestQueueAttrFakeSysfs(t *testing.T) {
	root := t.TempDir()
	disk := filepath.Join(root, "devices", "sda")
	for _, dir := range []string{filepath.Join(disk, "queue"), filepath.Join(disk, "sda2"), filepath.Join(root, "dev")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(disk, "queue", "rotational"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{"8:0": "../devices/sda", "8:2": "../devices/sda/sda2"}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, "dev", name)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		sysDir  string
		attr    string
		want    int64
		wantErr bool
	}{
		{"8:0", "rotational", 1, false},
		{"8:2", "rotational", 1, false},
		{"8:2", "discard_max_bytes", 0, true},
		{"9:9", "rotational", 0, true},
	}
	for _, tc := range tests {
		d := &blockDevice{fileDevice: fileDevice{name: tc.sysDir}, sysDir: filepath.Join(root, "dev", tc.sysDir)}
		got, err := d.queueAttr(tc.attr)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("queueAttr(%s, %s) = %d, %v; want %d, error %v", tc.sysDir, tc.attr, got, err, tc.want, tc.wantErr)
		}
	}
}
