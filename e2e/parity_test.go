package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParityProfiles is issue 40 through the command line: mkfs.ddfs
// -d raid6 -m raid1c3 on four images and -d raid5 -m raid6 on four; the
// files read back with any one member lost (any two for raid6); balance
// converts raid1 to raid5/raid6 and back; device add and a balance to the
// same profile widen the stripes (df shows the usable share grow); a
// deleted member is replaced from parity; fsck --check-data and scrub
// stay clean throughout.
func TestParityProfiles(t *testing.T) {
	t.Run("raid6-data", func(t *testing.T) {
		dir := t.TempDir()
		imgs := []string{"d0.img", "d1.img", "d2.img", "d3.img"}
		must(t, run(t, dir, "mkfs.ddfs", append([]string{"-q", "-b", "256M", "-d", "raid6", "-m", "raid1c3"}, imgs...)...), 0)
		fillDevTest(t, dir, "d0.img")
		sameFiles(t, dir, "d0.img")
		loseEach(t, dir, imgs, 1)
		loseEach(t, dir, imgs, 2)
	})
	t.Run("raid5-convert-widen-replace", func(t *testing.T) {
		dir := t.TempDir()
		imgs := mkfsProfile(t, dir, "256M", "raid1", 4)
		fillDevTest(t, dir, "d0.img")
		must(t, run(t, dir, "ddfs", "balance", "-d", "raid5", "-m", "raid6", "d0.img"), 0)
		sameFiles(t, dir, "d0.img")
		if df := must(t, run(t, dir, "ddfs", "df", "d0.img"), 0).stdout; !strings.Contains(df, "raid5") || !strings.Contains(df, "raid6") {
			t.Fatalf("df after the conversion:\n%s", df)
		}
		loseEach(t, dir, imgs, 1)
		ratio := func() float64 { // raw bytes per usable byte of raid5 data
			in := getInfo(t, dir, "d0.img")
			for _, c := range in.Chunks {
				if c.Type == "data" && c.Profile == "raid5" {
					return float64(len(c.Stripes)) / float64(len(c.Stripes)-1)
				}
			}
			t.Fatal("no raid5 data chunk")
			return 0
		}
		before := ratio()
		blank(t, dir, "d4.img")
		must(t, run(t, dir, "ddfs", "device", "add", "d0.img", "d4.img"), 0)
		must(t, run(t, dir, "ddfs", "balance", "-d", "raid5", "-m", "raid6", "d0.img"), 0)
		if after := ratio(); after >= before {
			t.Fatalf("raw/usable of raid5 data %.3f after device add and balance, %.3f before", after, before)
		}
		sameFiles(t, dir, "d0.img")
		if err := os.Remove(filepath.Join(dir, "d2.img")); err != nil {
			t.Fatal(err)
		}
		sameCopy(t, dir, "d0.img", "--degraded")
		blank(t, dir, "new.img")
		must(t, run(t, dir, "ddfs", "device", "replace", "--degraded", "d0.img", "3", "new.img"), 0)
		sameFiles(t, dir, "d0.img")
		must(t, run(t, dir, "ddfs", "scrub", "d0.img"), 0)
		must(t, run(t, dir, "ddfs", "balance", "-f", "-d", "raid1", "-m", "raid1", "d0.img"), 0)
		sameFiles(t, dir, "d0.img")
		if df := must(t, run(t, dir, "ddfs", "df", "d0.img"), 0).stdout; strings.Contains(df, "raid5") || strings.Contains(df, "raid6") {
			t.Fatalf("df after converting back:\n%s", df)
		}
	})
}

// blank makes an empty 256 MiB image file.
func blank(t *testing.T, dir, name string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, name))
	if err == nil {
		err = errors.Join(f.Truncate(256<<20), f.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
}
