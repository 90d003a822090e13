package alloc

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestHolesExact: holes between, around and after used ranges that touch,
// overlap and reach the end; no empty hole; equal holes in start order.
func TestHolesExact(t *testing.T) {
	d := DeviceSpace{DevID: 1, Size: 20 * mib, Used: []Range{
		{4 * mib, 2 * mib}, // 1..4 free before
		{6 * mib, 1 * mib}, // touches the one before: no hole between
		{6 * mib, 2 * mib}, // overlaps it
		{11 * mib, 3 * mib},
		{17 * mib, 3 * mib}, // reaches the end: no hole after
	}}
	want := []Range{{1 * mib, 3 * mib}, {8 * mib, 3 * mib}, {14 * mib, 3 * mib}}
	if got := d.Holes(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("holes %v, want %v", got, want)
	}
	d.Used = d.Used[:4] // now a larger hole at the end comes first
	want = []Range{{14 * mib, 6 * mib}, {1 * mib, 3 * mib}, {8 * mib, 3 * mib}}
	if got := d.Holes(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("holes %v, want %v", got, want)
	}
}

// TestFitAndDupOffsets: an exact fit is a fit; dup copies go to the low
// end of the lowest fitting hole and the high end of the highest.
func TestFitAndDupOffsets(t *testing.T) {
	holes := []Range{{30 * mib, 8 * mib}, {2 * mib, 4 * mib}, {10 * mib, 8 * mib}}
	if got := lowestFit(holes, 4*mib); got != 2*mib {
		t.Fatalf("lowestFit exact: %d", got/mib)
	}
	if got := lowestFit(holes, 5*mib); got != 10*mib {
		t.Fatalf("lowestFit: %d", got/mib)
	}
	if a, b := dupOffsets(holes, 4*mib); a != 2*mib || b != 34*mib {
		t.Fatalf("dupOffsets: %d %d MiB", a/mib, b/mib)
	}
	if a, b := dupOffsets(holes, 8*mib); a != 10*mib || b != 30*mib {
		t.Fatalf("dupOffsets of a size only two holes hold: %d %d MiB", a/mib, b/mib)
	}
	if a, b := dupOffsets(holes[:1], 4*mib); a != 30*mib || b != 34*mib {
		t.Fatalf("dupOffsets in one hole: %d %d MiB", a/mib, b/mib)
	}
}

// TestPlaceTiesAndNoSpace: devices with equal free space are taken in
// devid order; a chunk that fits nowhere is ErrNoSpace with no placement,
// with one tier or several.
func TestPlaceTiesAndNoSpace(t *testing.T) {
	devs := []DeviceSpace{{DevID: 3, Size: 64 * mib}, {DevID: 1, Size: 64 * mib}, {DevID: 2, Size: 64 * mib}}
	p, err := Place(devs, Request{Type: format.ChunkMetadata, Profile: format.ProfileRaid1, StripeSize: 8 * mib, MinStripe: mib})
	if err != nil || fmt.Sprint(stripeDevs(p)) != "[1 2]" {
		t.Fatalf("raid1 on equal devices: %v %v", stripeDevs(p), err)
	}
	for _, policy := range []format.AllocPolicy{format.AllocClassic, format.AllocTiered} {
		small := []DeviceSpace{full(DeviceSpace{DevID: 1, Size: 64 * mib}), full(DeviceSpace{DevID: 2, Size: 64 * mib, Rotational: true})}
		p, err := Place(small, Request{Type: format.ChunkData, Profile: format.ProfileSingle, StripeSize: 8 * mib, MinStripe: mib, Policy: policy})
		if p != nil || !errors.Is(err, ErrNoSpace) {
			t.Fatalf("%v: full devices: %+v, %v", policy, p, err)
		}
	}
}
