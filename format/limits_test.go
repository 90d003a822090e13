package format

import (
	"errors"
	"testing"
)

// TestFileDataLimits pins the limits of the appendix: the largest legal
// value of each decodes, one more is corruption.
func TestFileDataLimits(t *testing.T) {
	zstdExtent := func(disk, ram uint64) *FileExtentItem {
		return &FileExtentItem{Type: FileExtentRegular, Compression: CompressZstd, DiskLogical: 1 << 30, DiskLen: disk, NumBytes: 1, RAMBytes: ram}
	}
	plain := func(n uint64) *FileExtentItem {
		return &FileExtentItem{Type: FileExtentRegular, DiskLogical: 1 << 30, DiskLen: n, NumBytes: n, RAMBytes: n}
	}
	inline := func(n int) *FileExtentItem {
		return &FileExtentItem{Type: FileExtentInline, Inline: make([]byte, n)}
	}
	hole := func(n uint64) *FileExtentItem {
		return &FileExtentItem{Type: FileExtentRegular, NumBytes: n, RAMBytes: n}
	}
	for _, tc := range []struct {
		name string
		f    *FileExtentItem
		ok   bool
	}{
		{"largest extent", plain(MaxExtentBytes), true},
		{"extent one sector too big", plain(MaxExtentBytes + 4096), false},
		{"compressed: largest disk_len", zstdExtent(MaxExtentBytes, 4096), true},
		{"compressed: disk_len too big", zstdExtent(MaxExtentBytes+1, 4096), false},
		{"compressed: largest ram_bytes", zstdExtent(4096, MaxExtentBytes), true},
		{"compressed: ram_bytes too big", zstdExtent(4096, MaxExtentBytes+1), false},
		{"compressed: ram_bytes 2^62", zstdExtent(4096, 1<<62), false},
		{"largest inline", inline(MaxInlineData), true},
		{"inline too big", inline(MaxInlineData + 1), false},
		{"largest hole", hole(MaxFileSize), true},
		{"hole too big", hole(MaxFileSize + 1), false},
	} {
		_, err := UnmarshalFileExtentItem(MarshalFileExtentItem(tc.f))
		if tc.ok && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !tc.ok && !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", tc.name, err)
		}
	}

	h := hole(4096)
	for _, tc := range []struct {
		off uint64
		ok  bool
	}{{0, true}, {MaxFileSize - 4096, true}, {MaxFileSize - 4095, false}, {1 << 63, false}, {^uint64(0) - 100, false}} {
		if err := CheckFileExtentRange(tc.off, h); (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrCorrupt)) {
			t.Errorf("extent of 4096 bytes at %d: %v, want ok %v", tc.off, err, tc.ok)
		}
	}

	for _, tc := range []struct {
		key Key
		ok  bool
	}{
		{Key{1 << 30, ExtentItemKey, 4096}, true},
		{Key{1 << 30, ExtentItemKey, MaxExtentBytes}, true},
		{Key{1 << 30, ExtentItemKey, MaxExtentBytes + 4096}, false},
		{Key{1 << 30, ExtentItemKey, 0}, false},
		{Key{^uint64(0) - 4095, ExtentItemKey, 8192}, false},
	} {
		if err := CheckExtentItemKey(tc.key); (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrCorrupt)) {
			t.Errorf("extent item key %v: %v, want ok %v", tc.key, err, tc.ok)
		}
	}
	for _, tc := range []struct {
		ram uint64
		ok  bool
	}{{1, true}, {MaxExtentBytes, true}, {MaxExtentBytes + 1, false}, {0, false}} {
		_, err := UnmarshalExtentItem(MarshalExtentItem(&ExtentItem{Refs: 1, RAMBytes: tc.ram, Compression: CompressZstd}))
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrCorrupt)) {
			t.Errorf("extent item of %d ram bytes: %v, want ok %v", tc.ram, err, tc.ok)
		}
	}

	for _, tc := range []struct {
		mode uint32
		size uint64
		ok   bool
	}{
		{ModeRegular, MaxFileSize, true},
		{ModeRegular, MaxFileSize + 1, false},
		{ModeSymlink, MaxSymlinkTarget, true},
		{ModeSymlink, MaxSymlinkTarget + 1, false},
	} {
		i := testInode()
		i.Mode, i.Size = tc.mode|0o644, tc.size
		if _, err := UnmarshalInodeItem(MarshalInodeItem(i)); (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrCorrupt)) {
			t.Errorf("inode 0%o of size %d: %v, want ok %v", tc.mode, tc.size, err, tc.ok)
		}
	}
}
