package device

import (
	"bytes"
	"errors"
	"io"
	"syscall"
	"testing"
)

func TestFaultyFailAfter(t *testing.T) {
	tests := []struct {
		name string
		kind OpKind
		err  error
		do   func(d Device) error
	}{
		{"write EIO", OpWrite, syscall.EIO, func(d Device) error { _, err := d.WriteAt([]byte{1}, 0); return err }},
		{"write ENOSPC", OpWrite, syscall.ENOSPC, func(d Device) error { _, err := d.WriteAt([]byte{1}, 0); return err }},
		{"read EIO", OpRead, syscall.EIO, func(d Device) error { _, err := d.ReadAt(make([]byte, 1), 0); return err }},
		{"flush EIO", OpFlush, syscall.EIO, func(d Device) error { return d.Flush() }},
		{"discard EIO", OpDiscard, syscall.EIO, func(d Device) error { return d.Discard(0, 512) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := NewFaulty(NewMemDevice("mem", 4096), FailAfter(2, tc.kind, tc.err))
			for i := range 2 {
				if err := tc.do(d); err != nil {
					t.Fatalf("op %d failed early: %v", i, err)
				}
			}
			for i := 2; i < 4; i++ {
				if err := tc.do(d); !errors.Is(err, tc.err) {
					t.Fatalf("op %d: err = %v, want %v", i, err, tc.err)
				}
			}
		})
	}
}

func TestFaultyShortWrite(t *testing.T) {
	mem := NewMemDevice("mem", 4096)
	d := NewFaulty(mem, ShortWrite(1))
	if n, err := d.WriteAt(pattern(100, 1), 0); n != 100 || err != nil {
		t.Fatalf("first write = %d, %v", n, err)
	}
	n, err := d.WriteAt(pattern(100, 2), 1000)
	if n != 50 || !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("short write = %d, %v; want 50, ErrShortWrite", n, err)
	}
	want := append(pattern(100, 2)[:50], make([]byte, 50)...)
	if got := readAll(t, mem, 1000, 100); !bytes.Equal(got, want) {
		t.Fatal("short write did not land exactly half")
	}

	d.SetRule(nil)
	if _, err := d.WriteAt(pattern(100, 3), 2000); err != nil {
		t.Fatalf("after SetRule(nil): %v", err)
	}
}

// Wrappers stack and report the backend's name, size and props.
func TestWrappersPassThrough(t *testing.T) {
	mem := NewMemDevice("m0", 12345)
	d := NewFaulty(NewLog().Wrap(mem, 0), nil)
	if d.Name() != "m0" || d.Size() != 12345 || PropsOf(d) != (Props{}) {
		t.Fatalf("got %q %d %+v", d.Name(), d.Size(), PropsOf(d))
	}
	if inner := d.Unwrap().(Unwrapper).Unwrap(); inner != Device(mem) {
		t.Fatalf("Unwrap chain ends at %T", inner)
	}
}
