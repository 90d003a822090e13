package store

import (
	"errors"
	"fmt"
	"testing"
)

// pipeRows hands write every batch fill made, in order, split at gaps
// and at batchRows, each filled with its own rows; a fill or write error
// is returned and ends the run without a hang.
func TestPipeRows(t *testing.T) {
	rows := []uint64{0, 1, 2, 3, 4, 7, 8, 20}
	var got []string
	fill := func(row uint64, b []byte) error {
		for i := range b {
			b[i] = byte(row + uint64(i)/2)
		}
		return nil
	}
	write := func(row uint64, b []byte) error {
		for i := range b {
			if b[i] != byte(row+uint64(i)/2) {
				return fmt.Errorf("batch at %d: byte %d is another batch's", row, i)
			}
		}
		got = append(got, fmt.Sprintf("%d+%d", row, len(b)/2))
		return nil
	}
	if err := pipeRows(rows, 3, 2, fill, write); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[0+3 3+2 7+2 20+1]" {
		t.Fatalf("batches %v", got)
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name   string
		inFill bool
		at     int // the failing call
	}{{"fill", true, 2}, {"write", false, 1}} {
		calls := 0
		fail := func(uint64, []byte) error {
			if calls++; calls == tc.at {
				return boom
			}
			return nil
		}
		f, w := fill, write
		if tc.inFill {
			f = fail
		} else {
			w = fail
		}
		if err := pipeRows(rows, 1, 2, f, w); !errors.Is(err, boom) {
			t.Fatalf("%s error: %v", tc.name, err)
		}
	}
}
