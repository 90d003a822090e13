package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestLine(t *testing.T) {
	for _, c := range []struct {
		done, total uint64
		secs        float64
		want        string
	}{
		{1 << 30, 4 << 30, 2, "1.0G of 4.0G  25%  512M/s  ETA 0:06 copied"},
		{3 << 20, 0, 1.5, "3.0M copied  2.0M/s  0:02"},
		{0, 100, 0, "0 of 100   0%  0/s  ETA --:-- copied"},
		{5, 10, 1, "5 of 10  50%  5/s  ETA 0:01 copied"},
		{10 << 30, 10 << 30, 3601, "10G of 10G 100%  2.9M/s  ETA 0:00 copied"},
		{1, 1 << 40, 1, "1 of 1.0T   0%  1/s  ETA >99h copied"},
	} {
		if got := Line(c.done, c.total, c.secs, "copied"); got != c.want {
			t.Errorf("Line(%d, %d, %v) = %q, want %q", c.done, c.total, c.secs, got, c.want)
		}
	}
}

// TestBarClearsAndEnds: a shorter redraw blanks what the longer one left,
// and Done ends the line (the terminal's next output starts clean).
func TestBarClearsAndEnds(t *testing.T) {
	var b bytes.Buffer
	p := NewLabeled(&b, "read")
	p.SetTotal(1 << 40)
	p.Add(1 << 30)
	p.SetTotal(0)
	p.last = time.Time{}
	p.Add(1)
	p.Done()
	draws := strings.Split(b.String(), "\r")
	if len(draws) != 4 || !strings.HasSuffix(b.String(), "\n") {
		t.Fatalf("draws %q", b.String())
	}
	if len(draws[2]) != len(draws[1]) || !strings.HasSuffix(draws[2], " ") {
		t.Errorf("shorter line not padded over the longer: %q after %q", draws[2], draws[1])
	}
	var none bytes.Buffer
	NewLabeled(&none, "x").Done()
	if none.Len() != 0 {
		t.Errorf("a bar that counted nothing drew %q", none.String())
	}
}
