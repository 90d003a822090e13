package attrspec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// dateLayouts are the forms ParseDate takes besides "@SECONDS" and "now":
// ISO 8601 dates and times, with T or a space, optional fraction, and an
// optional zone (Z, +HH:MM, +HHMM, or a trailing " UTC").
var dateLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999 -0700",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}

// ParseDate reads a touch -d DATE: "now", "@SECONDS[.FRACTION]" (Unix
// time), or an ISO 8601 date/time as listed in dateLayouts; a time without
// a zone is in loc (the local zone, as GNU date does).
func ParseDate(s string, now time.Time, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "now":
		return now, nil
	case strings.HasPrefix(s, "@"):
		return parseEpoch(s[1:])
	}
	utc := false
	if t, ok := strings.CutSuffix(s, " UTC"); ok {
		s, utc = t, true
	}
	for _, l := range dateLayouts {
		zone := loc
		if utc {
			zone = time.UTC
		}
		if t, err := time.ParseInLocation(l, s, zone); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("invalid date format %q (want YYYY-MM-DD[ HH:MM[:SS[.N]]][ZONE], @SECONDS or now)", s)
}

func parseEpoch(s string) (time.Time, error) {
	sec, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || len(frac) > 9 || math.Abs(float64(n)) > 1<<62/1e9 {
		return time.Time{}, fmt.Errorf("invalid date format %q", "@"+s)
	}
	var ns int64
	if frac != "" {
		f, err := strconv.ParseUint(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("invalid date format %q", "@"+s)
		}
		ns = int64(f)
		if strings.HasPrefix(sec, "-") {
			ns = -ns
		}
	}
	return time.Unix(n, ns), nil
}

// ParseStamp reads a touch -t STAMP, [[CC]YY]MMDDhhmm[.ss], in loc as
// GNU touch does: without CC, YY 69-99 is 19YY and 00-68 20YY; without
// YY, now's year; ss 60 is the next minute; an impossible date (Feb 30,
// hour 24) is refused.
func ParseStamp(s string, now time.Time, loc *time.Location) (time.Time, error) {
	bad := fmt.Errorf("invalid date format %q (want [[CC]YY]MMDDhhmm[.ss])", s)
	d, ss, hasSec := strings.Cut(s, ".")
	if !allDigits(d) || hasSec && (len(ss) != 2 || !allDigits(ss)) {
		return time.Time{}, bad
	}
	year := now.In(loc).Year()
	switch len(d) {
	case 8:
	case 10:
		year = 2000 + num(d[:2])
		if year >= 2069 {
			year -= 100
		}
		d = d[2:]
	case 12:
		year, d = num(d[:4]), d[4:]
	default:
		return time.Time{}, bad
	}
	mon, day, hh, mm, sec := num(d[0:2]), num(d[2:4]), num(d[4:6]), num(d[6:8]), 0
	if hasSec {
		sec = num(ss)
	}
	t := time.Date(year, time.Month(mon), day, hh, mm, 0, 0, loc)
	if int(t.Month()) != mon || t.Day() != day || hh > 23 || mm > 59 || sec > 60 {
		return time.Time{}, bad
	}
	return t.Add(time.Duration(sec) * time.Second), nil
}

func allDigits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// num is the value of a few decimal digits (allDigits checked them).
func num(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
