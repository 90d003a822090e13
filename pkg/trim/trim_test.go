package trim

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
)

const mib = 1 << 20

func rg(start, n uint64) alloc.Range { return alloc.Range{Start: start, Len: n} }

// TestMerge: adjacent and overlapping free ranges become one discard, and
// the superblock copies and the first MiB are cut out.
func TestMerge(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []alloc.Range
		want string
	}{
		{"adjacent", []alloc.Range{rg(2*mib, mib), rg(3*mib, mib), rg(4*mib, 4096)}, "[{2097152 2101248}]"},
		{"unsorted overlap", []alloc.Range{rg(5*mib, mib), rg(2*mib, 4*mib)}, "[{2097152 4194304}]"},
		{"gap kept", []alloc.Range{rg(2*mib, 4096), rg(2*mib+8192, 4096)}, "[{2097152 4096} {2105344 4096}]"},
		{"first MiB", []alloc.Range{rg(0, 3*mib)}, "[{1048576 2097152}]"},
		{"superblock copy at 64 MiB", []alloc.Range{rg(63*mib, 2*mib)}, "[{66060288 1048576} {67174400 983040}]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(merge(tc.in)); got != tc.want {
				t.Fatalf("merge(%v) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

// TestMergeFragmented: a free space of n fragments separated by used
// blocks stays n discards; the same fragments freed next to each other
// become one.
func TestMergeFragmented(t *testing.T) {
	const n = 10000
	var apart, together []alloc.Range
	for i := range n {
		apart = append(apart, alloc.Range{Start: 128*mib + uint64(2*i)*4096, Len: 4096})
		together = append(together, alloc.Range{Start: 128*mib + uint64(i)*4096, Len: 4096})
	}
	if got := len(merge(apart)); got != n {
		t.Errorf("%d separate fragments gave %d discards", n, got)
	}
	if got := merge(together); len(got) != 1 || got[0].Len != n*4096 {
		t.Errorf("%d adjacent fragments gave %v", n, got)
	}
}

func TestWindow(t *testing.T) {
	rs := []alloc.Range{rg(2*mib, 2*mib), rg(8*mib, mib)}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, "[{2097152 2097152} {8388608 1048576}]"},
		{Options{Offset: 3 * mib}, "[{3145728 1048576} {8388608 1048576}]"},
		{Options{Offset: 3 * mib, Length: mib}, "[{3145728 1048576}]"},
		{Options{Offset: 9 * mib}, "[]"},
	} {
		if got := fmt.Sprint(window(rs, tc.o)); got != tc.want {
			t.Errorf("window %+v = %s, want %s", tc.o, got, tc.want)
		}
	}
}

// TestOffsetPastEnd: -o at or past the end of the largest device is
// EINVAL (FITRIM); inside it, or 0 on an empty set, is not.
func TestOffsetPastEnd(t *testing.T) {
	sizes := []uint64{256 * mib, 1024 * mib}
	for _, tc := range []struct {
		sizes []uint64
		off   uint64
		want  error
	}{
		{sizes, 1024 * mib, syscall.EINVAL},
		{sizes, 4096 * mib, syscall.EINVAL},
		{sizes, 1024*mib - 1, nil},
		{sizes, 512 * mib, nil},
		{sizes, 0, nil},
		{nil, 0, nil},
	} {
		if err := checkOffset(tc.sizes, tc.off); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("checkOffset(%v, %d) = %v, want %v", tc.sizes, tc.off, err, tc.want)
		}
	}
}

// TestRunInterrupted: a context ended during a run stops it before the
// next discard: the one done is reported, the rest are not made.
func TestRunInterrupted(t *testing.T) {
	var devs []store.NewDevice
	for i := 0; i < 2; i++ {
		d := device.NewMemDevice(fmt.Sprintf("m%d", i), 256*mib)
		devs = append(devs, store.NewDevice{Dev: d, Path: d.Name()})
	}
	fs, err := store.Create(store.CreateParams{FSID: [16]byte{7}, Csum: format.CsumCRC32C, NodeSize: 16384, SectorSize: 4096,
		Data: format.ProfileRaid0, Metadata: format.ProfileRaid1, Devices: devs})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	dry, err := Run(fs, Options{DryRun: true})
	if err != nil || len(dry.Devices) != 2 || dry.Devices[0].Discards < 2 {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	all := dry.Devices
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := Run(fs, Options{Context: ctx, Progress: func(int64) { cancel() }})
	res := r.Devices
	if !errors.Is(err, context.Canceled) || len(res) != 1 || res[0].Discards != 1 || res[0].Bytes == 0 || res[0].Bytes >= all[0].Bytes {
		t.Fatalf("interrupted after the first discard: %+v %v", res, err)
	}
}
