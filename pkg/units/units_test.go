package units

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"4096", 4096, true},
		{"64K", 64 << 10, true},
		{"64k", 64 << 10, true},
		{"150M", 150 << 20, true},
		{"1G", 1 << 30, true},
		{"1T", 1 << 40, true},
		{"1TiB", 1 << 40, true},
		{"2GB", 2 << 30, true},
		{"1.5G", 3 << 29, true},
		{"", 0, false},
		{"K", 0, false},
		{"-1", 0, false},
		{"12X", 0, false},
		{"20E", 0, false},
		{"7E", 7 << 60, true},
		{"7.5E", 15 << 59, true},
		{"8191P", 8191 << 50, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"NaN", 0, false},
		{"0", 0, true},
	} {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestParseSizeTooLarge: a size past int64 (a file's size, an offset) is
// refused as too large, never wrapped to a negative size downstream.
func TestParseSizeTooLarge(t *testing.T) {
	for _, in := range []string{"8E", "8EiB", "8.0E", "9E", "15E", "16E", "8192P", "9223372036854775808", "18446744073709551615", "18446744073709551616", "1e30", "inf"} {
		got, err := ParseSize(in)
		if err == nil || !strings.Contains(err.Error(), "too large") {
			t.Errorf("ParseSize(%q) = %d, %v; want too large", in, got, err)
		}
	}
}

func TestHuman(t *testing.T) {
	for in, want := range map[uint64]string{0: "0B", 1023: "1023B", 1024: "1.00KiB", 1 << 30: "1.00GiB", 1536 << 20: "1.50GiB", 1 << 40: "1.00TiB"} {
		if got := Human(in); got != want {
			t.Errorf("Human(%d) = %q, want %q", in, got, want)
		}
	}
}

// TestShortAgainstDu wants Short to print what GNU du -h --apparent-size
// prints for a sparse file of each size (the oracle is coreutils itself).
func TestShortAgainstDu(t *testing.T) {
	du, err := exec.LookPath("du")
	if err != nil {
		t.Skip("no du(1)")
	}
	sizes := []uint64{0, 1, 1023, 1024, 1025, 1126, 1127, 1536, 1537, 10239, 10240, 10241, 1048575, 1048576, 1048577, 5000000,
		1<<30 - 1, 1 << 30, 10<<30 + 1, 1023<<20 + 1, 1024<<20 - 1, 1<<40 - 1, 3<<40 + 1}
	for i := uint64(1); i < 60; i++ {
		sizes = append(sizes, i*i*i*977)
	}
	dir := t.TempDir()
	var paths []string
	var checked []uint64
	for i, n := range sizes {
		p := filepath.Join(dir, strconv.Itoa(i))
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		err = f.Truncate(int64(n))
		f.Close()
		if err != nil { // past the host filesystem's largest file
			continue
		}
		paths = append(paths, p)
		checked = append(checked, n)
	}
	if len(checked) < 70 {
		t.Fatalf("only %d sizes could be made", len(checked))
	}
	out, err := exec.Command(du, append([]string{"-h", "--apparent-size"}, paths...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i, line := range lines {
		want, _, _ := strings.Cut(line, "\t")
		if got := Short(checked[i]); got != want {
			t.Errorf("Short(%d) = %s, du -h says %s", checked[i], got, want)
		}
	}
}

func TestSatAdd(t *testing.T) {
	const most = ^uint64(0)
	for _, c := range []struct{ a, b, want uint64 }{
		{1, 2, 3}, {most - 1, 1, most}, {most, 1, most}, {1 << 63, 1 << 63, most}, {most, most, most}, {0, most, most},
	} {
		if got := SatAdd(c.a, c.b); got != c.want {
			t.Errorf("SatAdd(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
