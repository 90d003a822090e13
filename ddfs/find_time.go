package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/attrspec"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// findTime is an inode's atime ('a'), ctime ('c') or mtime ('m').
func findTime(in *fsys.Inode, which byte) format.Timespec {
	switch which {
	case 'a':
		return in.Atime
	case 'c':
		return in.Ctime
	}
	return in.Mtime
}

// since is how many seconds t lies before now, as a double the way GNU
// find's ts_difference counts: no overflow on any time an image holds.
func since(now, t format.Timespec) float64 {
	return float64(now.Sec) - float64(t.Sec) + (float64(now.Nsec)-float64(t.Nsec))/1e9
}

// after reports whether a is later than b.
func after(a, b format.Timespec) bool {
	return a.Sec > b.Sec || a.Sec == b.Sec && a.Nsec > b.Nsec
}

// timeTest is -amin/-atime/-cmin/-ctime/-mmin/-mtime [+-]N with GNU
// find's arithmetic (parse_time, get_relative_timestamp,
// pred_timewindow): the age is compared with a reference N units back
// from an origin, the start of the run for minutes and a day before it
// for days. So -mtime N is an age of N to N+1 days (days rounded down),
// +N more than N+1 days, -N less than N days and a second; -mmin N an
// age from N-1 to N minutes, +N more than N, -N less than N.
func (fd *finder) timeTest(name, a string) (pred, error) {
	which, unit := name[1], 86400.0
	if strings.HasSuffix(name, "min") {
		unit = 60
	}
	cmp, s := byte(0), a
	if s != "" && (s[0] == '+' || s[0] == '-') {
		cmp, s = s[0], s[1:]
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || s == "" || strings.Trim(s, "0123456789.") != "" || n > 1e12 {
		return nil, usageErr("%s: want [+-]N, not '%s'", name, a)
	}
	// d - age is GNU's delta: the time less the reference time.
	d := n * unit
	if unit == 86400 {
		d += unit
		if cmp == '-' {
			d = n*unit + 1
		}
	}
	now := fd.now
	return func(e *entry) bool {
		delta := d - since(now, findTime(e.in, which))
		switch cmp {
		case '+':
			return delta < 0
		case '-':
			return delta > 0
		}
		return delta > 0 && delta <= unit
	}, nil
}

// newerTest is -newerXY REF: the entry's time X (a, c or m) is later
// than REF's time Y (a, c or m of REF, an image path of the same image
// or a host file), or than the date REF when Y is t (-newermt DATE:
// attrspec.ParseDate's forms, as touch -d). -newer REF is -newermm REF.
func (fd *finder) newerTest(x, y byte, ref string) (pred, error) {
	var t format.Timespec
	if y == 't' {
		d, err := attrspec.ParseDate(ref, time.Now(), time.Local)
		if err != nil {
			return nil, usageErr("-newer%c%c: %v", x, y, err)
		}
		t = fsys.TimespecOf(d)
	} else {
		var err error
		if t, err = fd.refTime(ref, y); err != nil {
			return nil, err
		}
	}
	return func(e *entry) bool { return after(findTime(e.in, x), t) }, nil
}

// newerName splits -newerXY into X and Y; ok is false for another name.
func newerName(name string) (x, y byte, ok bool) {
	if name == "-newer" {
		return 'm', 'm', true
	}
	xy, found := strings.CutPrefix(name, "-newer")
	if !found || len(xy) != 2 || !strings.ContainsRune("acm", rune(xy[0])) || !strings.ContainsRune("acmt", rune(xy[1])) {
		return 0, 0, false
	}
	return xy[0], xy[1], true
}
