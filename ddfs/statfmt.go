package main

import (
	"strconv"
	"strings"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/attrspec"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// statFormat expands a GNU stat -c/--printf format for one inode. The
// directives are GNU's file directives; those that describe the host
// device (%d, %D) are 0 because an image path has no host device, %m is
// the image's root, and %C (SELinux context) is "?" as GNU prints when
// there is none. An unknown directive prints "?", as GNU's does.
type statFormat struct {
	acc *attrspec.Accounts
	// accounts gives acc on the first %U or %G (nil: numbers): only a
	// format that names owners reads the image's /etc/passwd.
	accounts func() (*attrspec.Accounts, error)
	err      error  // accounts' failure
	img      string // image name, for %n and %N ("IMAGE:PATH")
}

// names are the accounts %U and %G use, read on the first call.
func (sf *statFormat) names() *attrspec.Accounts {
	if sf.acc == nil {
		sf.acc = &attrspec.Accounts{}
		if sf.accounts != nil {
			if acc, err := sf.accounts(); err != nil {
				sf.err = err
			} else {
				sf.acc = acc
			}
		}
	}
	return sf.acc
}

// expand is spec with its directives replaced, and with escapes (for
// --printf) its backslash escapes too, in the same pass: an escape that
// stands for '%' is a literal '%', as in GNU stat.
func (sf *statFormat) expand(spec string, escapes bool, p string, in *fsys.Inode, target string) string {
	var b strings.Builder
	for i := 0; i < len(spec); i++ {
		c := spec[i]
		if c == '\\' && escapes {
			var e string
			e, i = escapeAt(spec, i)
			b.WriteString(e)
			continue
		}
		if c != '%' || i+1 == len(spec) {
			b.WriteByte(c)
			continue
		}
		// GNU accepts printf flags, width and precision between % and the
		// directive (%-10n, %08s): kept and applied to the value.
		j := i + 1
		for j < len(spec) && strings.IndexByte("-+ #0'123456789.", spec[j]) >= 0 {
			j++
		}
		if j == len(spec) {
			b.WriteString(spec[i:])
			break
		}
		flags, d := spec[i+1:j], spec[j]
		i = j
		if d == '%' {
			b.WriteByte('%')
			continue
		}
		v, num, ok := sf.directive(d, p, in, target)
		if !ok {
			v = "?"
		}
		b.WriteString(pad(v, flags, num))
	}
	return b.String()
}

// pad applies printf flags, width and precision to a directive's value:
// '-' left-justifies, '0' pads numbers with zeros, a precision truncates
// a string (other flags change nothing for these values).
func pad(v, flags string, num bool) string {
	minus, zero := strings.Contains(flags, "-"), false
	digits := strings.TrimLeft(flags, "-+ #0'")
	zero = num && !minus && strings.Contains(flags[:len(flags)-len(digits)], "0")
	width, prec, dot := digits, "", strings.IndexByte(digits, '.')
	if dot >= 0 {
		width, prec = digits[:dot], digits[dot+1:]
	}
	if n, err := strconv.Atoi(prec); err == nil && !num && n < len(v) {
		v = v[:n]
	}
	w, _ := strconv.Atoi(width)
	w = min(w, 4096) // a width is the user's; bound it all the same
	switch {
	case len(v) >= w:
		return v
	case minus:
		return v + strings.Repeat(" ", w-len(v))
	case zero:
		return strings.Repeat("0", w-len(v)) + v
	}
	return strings.Repeat(" ", w-len(v)) + v
}

// directive is the value of %d, whether it is a number, and whether d is
// a directive at all.
func (sf *statFormat) directive(d byte, p string, in *fsys.Inode, target string) (string, bool, bool) {
	u := func(n uint64) (string, bool, bool) { return strconv.FormatUint(n, 10), true, true }
	s := func(v string) (string, bool, bool) { return v, false, true }
	major, minor := in.Rdev>>8&0xfff, in.Rdev&0xff|in.Rdev>>12&0xfff00
	switch d {
	case 'a':
		return strconv.FormatUint(uint64(in.Mode&0o7777), 8), true, true
	case 'A':
		return s(modeString(in.Mode))
	case 'b':
		return u((in.NBytes + 511) / 512)
	case 'B':
		return u(512)
	case 'C':
		return s("?")
	case 'd':
		return u(0)
	case 'D':
		return s("0")
	case 'f':
		return strconv.FormatUint(uint64(in.Mode), 16), true, true
	case 'F':
		return s(fileType(in))
	case 'g':
		return u(uint64(in.GID))
	case 'G':
		return s(sf.names().GroupName(in.GID))
	case 'h':
		return u(uint64(in.Nlink))
	case 'i':
		return u(in.Ino)
	case 'm':
		return s("/")
	case 'n':
		return s(sf.img + ":" + p)
	case 'N':
		n := "'" + sf.img + ":" + p + "'"
		if in.IsSymlink() {
			n += " -> '" + target + "'"
		}
		return s(n)
	case 'o':
		return u(4096)
	case 's':
		return u(in.Size)
	case 't':
		return strconv.FormatUint(major, 16), true, true
	case 'T':
		return strconv.FormatUint(minor, 16), true, true
	case 'u':
		return u(uint64(in.UID))
	case 'U':
		return s(sf.names().UserName(in.UID))
	case 'w', 'x', 'y', 'z':
		return s(gnuTime(timeOf(d, in)))
	case 'W', 'X', 'Y', 'Z':
		return strconv.FormatInt(timeOf(d|0x20, in).Sec, 10), true, true
	}
	return "", false, false
}

func timeOf(d byte, in *fsys.Inode) format.Timespec {
	switch d {
	case 'w':
		return in.Btime
	case 'x':
		return in.Atime
	case 'y':
		return in.Mtime
	}
	return in.Ctime
}

// gnuTime is GNU stat's human time: UTC (the image has no time zone of
// its own), nanoseconds, numeric zone.
func gnuTime(t format.Timespec) string {
	return fsys.Time(t).UTC().Format("2006-01-02 15:04:05.000000000 -0700")
}

// escapeAt interprets the backslash escape at s[i] (s[i] == '\\') as
// printf(1) does (\n \t \\ \" \a \b \f \r \v, \NNN octal, \xHH hex): the
// bytes it stands for and the index of its last byte. An unknown escape
// is its character without the backslash, as GNU stat prints it.
func escapeAt(s string, i int) (string, int) {
	if i+1 == len(s) {
		return "\\", i
	}
	i++
	if k := strings.IndexByte(`ntabfrv\"`, s[i]); k >= 0 {
		return "\n\t\a\b\f\r\v\\\""[k : k+1], i
	}
	if digits, base, max := escapeDigits(s[i]); digits != "" {
		j := i
		if base == 16 {
			j++ // past the x
		}
		e := j
		for e < len(s) && e-j < max && strings.IndexByte(digits, s[e]|0x20) >= 0 {
			e++
		}
		if v, err := strconv.ParseUint(s[j:e], base, 8); err == nil && e > j {
			return string([]byte{byte(v)}), e - 1
		}
	}
	return s[i : i+1], i
}

// escapeDigits: the digits, base and count of an escape starting with c.
func escapeDigits(c byte) (string, int, int) {
	switch {
	case c >= '0' && c <= '7':
		return "01234567", 8, 3
	case c == 'x':
		return "0123456789abcdef", 16, 2
	}
	return "", 0, 0
}
