package units

import "testing"

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
	} {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d ok=%v", tc.in, got, err, tc.want, tc.ok)
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
