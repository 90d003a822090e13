package attrspec

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestDateAgainstGNUDate reads each form with ParseDate and with GNU
// date(1) -d in the same zone and wants the same instant to the ns.
func TestDateAgainstGNUDate(t *testing.T) {
	date, err := exec.LookPath("date")
	if err != nil {
		t.Skip("no date(1)")
	}
	for _, zone := range []string{"UTC", "America/New_York"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Skipf("zone %s: %v", zone, err)
		}
		for _, s := range []string{"2024-02-29", "2024-02-29 13:45", "2024-02-29 13:45:07", "2024-02-29 13:45:07.123456789",
			"2024-02-29T13:45:07", "2024-02-29T13:45:07Z", "2024-02-29T13:45:07+02:00", "2024-02-29 13:45:07.5+02:00",
			"2024-07-01 00:00:00 UTC", "2024-07-01 12:00", "@0", "@1700000000", "@1700000000.25", "@-1", "1970-01-01"} {
			cmd := exec.Command(date, "-d", s, "+%s.%N")
			cmd.Env = []string{"TZ=" + zone}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("date -d %q: %v", s, err)
			}
			want := strings.TrimSpace(string(out))
			got, err := ParseDate(s, time.Now(), loc)
			if err != nil {
				t.Errorf("%s: ParseDate(%q): %v", zone, s, err)
				continue
			}
			if g := epochString(got); g != want {
				t.Errorf("%s: ParseDate(%q) = %s, date(1) says %s", zone, s, g, want)
			}
		}
	}
	for _, bad := range []string{"", "tomorrowish", "2024-13-01", "2024-02-30", "@x", "@1.1234567891", "@99999999999999999999"} {
		if _, err := ParseDate(bad, time.Now(), time.UTC); err == nil {
			t.Errorf("ParseDate(%q) accepted", bad)
		}
	}
	now := time.Unix(5, 6)
	if got, _ := ParseDate("now", now, time.UTC); !got.Equal(now) {
		t.Errorf("now = %v", got)
	}
}

// epochString is date +%s.%N of t (floor seconds, ns after them).
func epochString(t time.Time) string { return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond()) }

// TestStampAgainstGNUTouch sets a file's time with GNU touch -t STAMP and
// wants ParseStamp to give the same second, or to refuse what it refuses.
func TestStampAgainstGNUTouch(t *testing.T) {
	touch, err := exec.LookPath("touch")
	if err != nil {
		t.Skip("no touch(1)")
	}
	f := t.TempDir() + "/f"
	for _, zone := range []string{"UTC", "America/New_York"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Skipf("zone %s: %v", zone, err)
		}
		for _, s := range []string{"202401020304.05", "2401020304", "6901020304", "6801020304", "01020304", "202402291200",
			"202401020304.60", "202412312359.60", "0230120", "02301200", "202302291200", "202401021260", "202401022400",
			"202401020304.61", "2024-01-02", "202401020304.5", "x2401020304", "1231235959"} {
			now := time.Now()
			cmd := exec.Command(touch, "-t", s, f)
			cmd.Env = []string{"TZ=" + zone}
			gnuErr := cmd.Run()
			got, err := ParseStamp(s, now, loc)
			if gnuErr != nil || err != nil {
				if (gnuErr == nil) != (err == nil) {
					t.Errorf("%s: touch -t %q: GNU %v, ParseStamp %v", zone, s, gnuErr, err)
				}
				continue
			}
			st, serr := os.Stat(f)
			if serr != nil {
				t.Fatal(serr)
			}
			if want := st.ModTime().Unix(); got.Unix() != want && now.Year() == time.Now().Year() {
				t.Errorf("%s: ParseStamp(%q) = %d (%v), touch -t gives %d", zone, s, got.Unix(), got, want)
			}
		}
	}
}
