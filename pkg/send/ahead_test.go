package send

import (
	"bytes"
	"errors"
	"testing"
)

// failAfter accepts n bytes, then fails every write.
type failAfter struct {
	n   int
	got bytes.Buffer
}

var errFull = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.got.Len()+len(p) > f.n {
		return 0, errFull
	}
	return f.got.Write(p)
}

// TestAheadWriter: what goes in comes out whole and in order, across
// buffer edges and writes bigger than a buffer; a failing writer's error
// reaches Write or Flush (never a hang), and a full Send to it fails
// with that error.
func TestAheadWriter(t *testing.T) {
	want := rnd(3, 5*aheadBuf+12345)
	var out bytes.Buffer
	a := newAheadWriter(&out)
	for off, i := 0, 0; off < len(want); i++ {
		n := min(len(want)-off, []int{1, 4095, aheadBuf, 3*aheadBuf + 7, 100}[i%5])
		if k, err := a.Write(want[off : off+n]); k != n || err != nil {
			t.Fatalf("write %d: %d %v", n, k, err)
		}
		off += n
	}
	if err := a.Flush(); err != nil || !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("flush %v; %d bytes out, %d in, equal %v", err, out.Len(), len(want), bytes.Equal(out.Bytes(), want))
	}
	if _, err := a.Write([]byte{1}); err == nil {
		t.Fatal("a write after Flush was taken")
	}

	fw := &failAfter{n: 2 * aheadBuf}
	a = newAheadWriter(fw)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = a.Write(want[:aheadBuf/2])
	}
	if ferr := a.Flush(); !errors.Is(ferr, errFull) || err != nil && !errors.Is(err, errFull) {
		t.Fatalf("write error %v, flush error %v; want %v", err, ferr, errFull)
	}

	v, stream := sendOf(t)
	if _, err := Send(v, &failAfter{n: len(stream) / 2}, Snapshot{Name: "s"}, SendOptions{}); !errors.Is(err, errFull) {
		t.Fatalf("send to a failing writer: %v", err)
	}
}
