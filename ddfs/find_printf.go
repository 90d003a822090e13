package main

import (
	"fmt"
	"strconv"
)

// printfPart appends one piece of a -printf output for an entry.
type printfPart func(b []byte, e *entry) []byte

// printfAction is -printf FORMAT with a subset of GNU find's: %p (the
// path), %s (the size in bytes), %m (the permission bits in octal), %u
// (the owner's name from the image's /etc/passwd, else the number), %T@
// (the mtime in seconds since the epoch, with GNU's 10 fractional
// digits), %%, and the escapes \n, \t, \0 and \\. Anything else is
// refused (GNU find warns and prints it), so a format never prints
// something other than what was asked.
func (fd *finder) printfAction(format string) (pred, error) {
	parts, err := fd.compilePrintf(format)
	if err != nil {
		return nil, err
	}
	var buf []byte
	return func(e *entry) bool {
		buf = buf[:0]
		for _, p := range parts {
			buf = p(buf, e)
		}
		fd.w.Write(buf)
		return true
	}, nil
}

func (fd *finder) compilePrintf(format string) ([]printfPart, error) {
	var parts []printfPart
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			s := string(lit)
			parts = append(parts, func(b []byte, _ *entry) []byte { return append(b, s...) })
			lit = nil
		}
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '\\' && c != '%' {
			lit = append(lit, c)
			continue
		}
		if i+1 == len(format) {
			return nil, usageErr("-printf: '%c' at the end of the format", c)
		}
		i++
		if c == '\\' {
			esc, ok := map[byte]byte{'n': '\n', 't': '\t', '0': 0, '\\': '\\'}[format[i]]
			if !ok {
				return nil, usageErr(`-printf: unknown escape '\%c' (known: \n \t \0 \\)`, format[i])
			}
			lit = append(lit, esc)
			continue
		}
		d := string(format[i])
		if d == "T" && i+1 < len(format) {
			i++
			d += string(format[i])
		}
		if d == "%" {
			lit = append(lit, '%')
			continue
		}
		p, err := fd.directive(d)
		if err != nil {
			return nil, err
		}
		flush()
		parts = append(parts, p)
	}
	flush()
	return parts, nil
}

// directive is the printfPart of %d (d without the '%').
func (fd *finder) directive(d string) (printfPart, error) {
	switch d {
	case "p":
		return func(b []byte, e *entry) []byte { return append(b, e.path...) }, nil
	case "s":
		return func(b []byte, e *entry) []byte { return strconv.AppendUint(b, e.in.Size, 10) }, nil
	case "m":
		return func(b []byte, e *entry) []byte { return strconv.AppendUint(b, uint64(e.in.Mode&0o7777), 8) }, nil
	case "T@":
		return func(b []byte, e *entry) []byte {
			return fmt.Appendf(b, "%d.%09d0", e.in.Mtime.Sec, e.in.Mtime.Nsec)
		}, nil
	case "u":
		if fd.acc == nil {
			if fd.im == nil {
				return nil, usageErr("-printf %%u/%%g: a foreign image has no user names")
			}
			acc, err := accountsOf(fd.im.f)
			if err != nil {
				return nil, fd.im.err(err)
			}
			fd.acc = acc
		}
		return func(b []byte, e *entry) []byte { return append(b, fd.acc.UserName(e.in.UID)...) }, nil
	}
	return nil, usageErr("-printf: unknown directive '%%%s' (known: %%p %%s %%m %%u %%T@ %%%%)", d)
}
