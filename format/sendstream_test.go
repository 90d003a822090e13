package format

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

func sampleRecords() []Record {
	ts := Timespec{Sec: 1700000000, Nsec: 5}
	return []Record{
		{Type: RecBegin, UUID: [16]byte{1}, Ctim: ts, Name: "nightly"},
		{Type: RecMkdir, Path: "", Mode: 0o755},
		{Type: RecMkdir, Path: "d", Mode: 0o2750, UID: 7, GID: 8},
		{Type: RecMkfile, Path: "d/f", Mode: 0o4755, UID: 1},
		{Type: RecWrite, Path: "d/f", Offset: 4096, Data: []byte("hello")},
		{Type: RecTruncate, Path: "d/f", Offset: 1 << 20},
		{Type: RecSetXattr, Path: "d/f", Name: "user.k", Data: []byte{0, 1}},
		{Type: RecSetXattr, Path: "d", Name: "user.empty", Data: []byte{}},
		{Type: RecSymlink, Path: "l", Target: "../x", UID: 3},
		{Type: RecMknod, Path: "null", Mode: 0o020666, Rdev: 0x103},
		{Type: RecLink, Path: "d/g", Target: "d/f"},
		{Type: RecUtimes, Path: "d/f", Atime: ts, Mtime: ts, Ctim: ts},
		{Type: RecUnlink, Path: "d/g"},
		{Type: RecRmdir, Path: "d/e"},
		{Type: RecSetAttr, Path: "", Mode: 0o700, UID: 2, GID: 3},
		{Type: RecRemoveXattr, Path: "d", Name: "user.k"},
		{Type: RecPunch, Path: "d/f", Offset: 4096, Length: 8192},
		{Type: RecRename, Path: "d/g", Target: "d/h"},
		{Type: RecEncoded, Path: "d/f", Offset: 8192, Length: 100, RAMBytes: 4096, RAMOffset: 3996, Compression: CompressS2, Data: []byte{3, 0, 0, 0, 1, 2, 3}},
		{Type: RecEnd, Records: 17, Bytes: 999},
	}
}

// TestStreamRoundTrip: every record type decodes to what was encoded,
// and the header checks.
func TestStreamRoundTrip(t *testing.T) {
	b := AppendStreamHeader(nil)
	if err := CheckStreamHeader(b); err != nil {
		t.Fatal(err)
	}
	for _, r := range sampleRecords() {
		b = AppendRecord(b, &r)
	}
	rd := bytes.NewReader(b[StreamHeaderSize:])
	var buf []byte
	for i, want := range sampleRecords() {
		var got Record
		if _, err := ReadRecord(rd, &got, &buf); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if want.Data == nil && got.Data != nil && len(got.Data) == 0 {
			got.Data = nil
		}
		if !bytes.Equal(got.Data, want.Data) {
			t.Fatalf("record %d: data %q, want %q", i, got.Data, want.Data)
		}
		got.Data, want.Data = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("record %d: %+v, want %+v", i, got, want)
		}
	}
	var r Record
	if _, err := ReadRecord(rd, &r, &buf); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("past the end: %v", err)
	}
}

// TestStreamRefusals: a flipped byte anywhere in a record, a cut, and
// each rule of §10 are refused as corrupt.
func TestStreamRefusals(t *testing.T) {
	one := AppendRecord(nil, &sampleRecords()[4])
	for i := range one {
		c := bytes.Clone(one)
		c[i] ^= 0x10
		var r Record
		var buf []byte
		if _, err := ReadRecord(bytes.NewReader(c), &r, &buf); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	for n := range len(one) {
		var r Record
		var buf []byte
		if _, err := ReadRecord(bytes.NewReader(one[:n]), &r, &buf); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut at %d: %v", n, err)
		}
	}
	for name, r := range map[string]Record{
		"dotdot":          {Type: RecMkfile, Path: "a/../b"},
		"absolute":        {Type: RecMkfile, Path: "/a"},
		"empty component": {Type: RecMkfile, Path: "a//b"},
		"root file":       {Type: RecMkfile, Path: ""},
		"mode type bits":  {Type: RecMkfile, Path: "a", Mode: 0o100644},
		"mknod regular":   {Type: RecMknod, Path: "a", Mode: 0o100644},
		"fifo rdev":       {Type: RecMknod, Path: "a", Mode: 0o010644, Rdev: 1},
		"empty write":     {Type: RecWrite, Path: "a"},
		"write wraps":     {Type: RecWrite, Path: "a", Offset: 1<<64 - 2, Data: []byte("xyz")},
		"link to root":    {Type: RecLink, Path: "a", Target: ""},
		"rename to root":  {Type: RecRename, Path: "a", Target: ""},
		"empty target":    {Type: RecSymlink, Path: "a"},
		"xattr no name":   {Type: RecSetXattr, Path: "a"},
		"begin no uuid":   {Type: RecBegin, Name: "s"},
		"begin bad name":  {Type: RecBegin, UUID: [16]byte{1}, Name: "a/b"},
		"nsec":            {Type: RecUtimes, Path: "a", Mtime: Timespec{Nsec: 1e9}},
		"unknown type":    {Type: 99, Path: "a"},
		"unlink root":     {Type: RecUnlink, Path: ""},
		"empty punch":     {Type: RecPunch, Path: "a", Offset: 1},
		"setattr type":    {Type: RecSetAttr, Path: "a", Mode: 0o40755},
		"encoded none":    {Type: RecEncoded, Path: "a", Length: 1, RAMBytes: 1, Compression: CompressNone, Data: make([]byte, 4)},
		"encoded past":    {Type: RecEncoded, Path: "a", Length: 2, RAMBytes: 4096, RAMOffset: 4095, Compression: CompressZstd, Data: make([]byte, 4)},
		"encoded wraps":   {Type: RecEncoded, Path: "a", Length: 2, RAMBytes: 4096, RAMOffset: 1<<64 - 1, Compression: CompressZstd, Data: make([]byte, 4)},
		"encoded huge":    {Type: RecEncoded, Path: "a", Length: 1, RAMBytes: MaxExtentBytes + 1, Compression: CompressZstd, Data: make([]byte, 4)},
		"encoded short":   {Type: RecEncoded, Path: "a", Length: 1, RAMBytes: 1, Compression: CompressS2, Data: make([]byte, 3)},
		"encoded empty":   {Type: RecEncoded, Path: "a", RAMBytes: 1, Compression: CompressS2, Data: make([]byte, 4)},
	} {
		b := AppendRecord(nil, &r)
		var got Record
		var buf []byte
		if _, err := ReadRecord(bytes.NewReader(b), &got, &buf); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: accepted (%v)", name, err)
		}
	}
	if err := CheckStreamHeader([]byte("ddfssend\x02\x00\x00\x00\x00\x00\x00\x00")); err == nil {
		t.Error("version 2 accepted")
	}
}

// FuzzReadRecord: any bytes decode to an error or to a record that
// encodes back to the same bytes.
func FuzzReadRecord(f *testing.F) {
	for _, r := range sampleRecords() {
		f.Add(AppendRecord(nil, &r))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Record
		var buf []byte
		n, err := ReadRecord(bytes.NewReader(b), &r, &buf)
		if err != nil {
			return
		}
		if again := AppendRecord(nil, &r); !bytes.Equal(again, b[:n]) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b[:n], r, again)
		}
	})
}
