package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskfs/go-diskfs/partition/gpt"
)

// TestPartitionOfDiskImage: mkfs and info on partition 2 of a GPT image;
// the bytes land inside the partition and the table survives.
func TestPartitionOfDiskImage(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "disk.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	const size = 512 << 20
	f.Truncate(size)
	tbl := &gpt.Table{
		LogicalSectorSize: 512, PhysicalSectorSize: 512, ProtectiveMBR: true,
		Partitions: []*gpt.Partition{
			{Index: 1, Start: 2048, End: 206847, Type: gpt.EFISystemPartition, Name: "esp"},
			{Index: 2, Start: 206848, End: 1046527, Type: gpt.LinuxFilesystem, Name: "ddfs"},
		},
	}
	if err := tbl.Write(f, size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// The whole disk carries a partition table: refused without -f.
	r := must(t, run(t, dir, "mkfs.ddfs", "-q", "disk.img"), 1)
	if !strings.Contains(r.stderr, "partition table") {
		t.Fatalf("stderr %q", r.stderr)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-L", "inpart", "disk.img@2"), 0)
	in := getInfo(t, dir, "disk.img@2")
	if in.Label != "inpart" || len(in.Devices) != 1 || in.Devices[0].Size != (1046527-206848+1)*512 {
		t.Fatalf("info %+v", in)
	}
	must(t, run(t, dir, "fsck.ddfs", "disk.img@2"), 0)
	// The superblock sits 64 KiB into partition 2, not into the disk.
	b := make([]byte, 8)
	f, _ = os.Open(img)
	f.ReadAt(b, 206848*512+64<<10+32)
	f.Close()
	if string(b) != "_DDFS_SB" {
		t.Fatalf("no superblock at the partition's 64 KiB: %q", b)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "disk.img@3"), 1)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "disk.img@3"), 1) // a partition spec is never a new file
	// A name with '@' that names no partition of an existing image is a
	// new image file, as any other name.
	for _, name := range []string{"a@b.img", "new@2"} {
		must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", name), 0)
		must(t, run(t, dir, "fsck.ddfs", name), 0)
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() != 256<<20 {
			t.Fatalf("%s: %v %v", name, fi, err)
		}
	}
}

// loopDevice attaches a 256 MiB image file in a temp dir as a loop device
// (detached at cleanup) and returns the dir, the device and the file.
// It skips the test where loop devices are unavailable (not root, no
// losetup, no free loop device).
func loopDevice(t *testing.T) (dir, loop, backing string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for losetup")
	}
	if _, err := exec.LookPath("losetup"); err != nil {
		t.Skip("no losetup")
	}
	dir = t.TempDir()
	backing = filepath.Join(dir, "backing.img")
	f, err := os.Create(backing)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(256 << 20)
	f.Close()
	out, err := exec.Command("losetup", "-f", "--show", backing).Output()
	if err != nil {
		t.Skipf("losetup: %v", err)
	}
	loop = strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", loop).Run() })
	return dir, loop, backing
}

// TestLoopDevice: a block device gets its size by ioctl and rotational
// from sysfs. Needs root and losetup; skipped otherwise.
func TestLoopDevice(t *testing.T) {
	dir, loop, _ := loopDevice(t)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-f", loop), 0)
	in := getInfo(t, dir, loop)
	if in.Devices[0].Size != 256<<20 || in.Devices[0].Path != loop {
		t.Fatalf("info %+v", in.Devices)
	}
	rot, err := os.ReadFile("/sys/block/" + filepath.Base(loop) + "/queue/rotational")
	if err == nil && (strings.TrimSpace(string(rot)) == "1") != in.Devices[0].Rotational {
		t.Fatalf("rotational %v, sysfs says %s", in.Devices[0].Rotational, rot)
	}
	must(t, run(t, dir, "fsck.ddfs", loop), 0)
}
