package main

import (
	"path"
	"strconv"
	"strings"
	"syscall"
)

// findParser reads a find expression by recursive descent: or, and (also
// implied between two terms), not, parentheses, primaries.
type findParser struct {
	fd     *finder
	toks   []string
	i      int
	action bool // an action was given: no implied -print
}

// parseFind returns the predicate of a find expression; without an
// action it is ( EXPR ) -print, as in GNU find.
func parseFind(fd *finder, toks []string) (pred, error) {
	p := &findParser{fd: fd, toks: toks}
	e := func(*entry) bool { return true }
	if len(toks) > 0 {
		var err error
		if e, err = p.or(); err != nil {
			return nil, err
		}
		if p.i < len(toks) {
			return nil, usageErr("unexpected '%s'", toks[p.i])
		}
	}
	if p.action {
		return e, nil
	}
	print := fd.printer("\n")
	return func(en *entry) bool { return e(en) && print(en) }, nil
}

func (p *findParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *findParser) or() (pred, error) {
	l, err := p.and()
	for err == nil && (p.peek() == "-o" || p.peek() == "-or") {
		p.i++
		var r pred
		if r, err = p.and(); err == nil {
			l0 := l
			l = func(e *entry) bool { return l0(e) || r(e) }
		}
	}
	return l, err
}

func (p *findParser) and() (pred, error) {
	l, err := p.not()
	for err == nil {
		switch p.peek() {
		case "", "-o", "-or", ")":
			return l, nil
		case "-a", "-and":
			p.i++
		}
		var r pred
		if r, err = p.not(); err == nil {
			l0 := l
			l = func(e *entry) bool { return l0(e) && r(e) }
		}
	}
	return l, err
}

func (p *findParser) not() (pred, error) {
	switch p.peek() {
	case "!", "-not":
		p.i++
		e, err := p.not()
		if err != nil {
			return nil, err
		}
		return func(en *entry) bool { return !e(en) }, nil
	case "(":
		p.i++
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, usageErr("missing ')'")
		}
		p.i++
		return e, nil
	case "":
		return nil, usageErr("expected an expression after '%s'", p.toks[p.i-1])
	}
	return p.primary()
}

// arg takes the argument of primary name.
func (p *findParser) arg(name string) (string, error) {
	if p.i >= len(p.toks) {
		return "", usageErr("missing argument to '%s'", name)
	}
	p.i++
	return p.toks[p.i-1], nil
}

func (p *findParser) primary() (pred, error) {
	name := p.toks[p.i]
	p.i++
	switch name {
	case "-true":
		return func(*entry) bool { return true }, nil
	case "-false":
		return func(*entry) bool { return false }, nil
	case "-print", "-print0":
		p.action = true
		return p.fd.printer(map[string]string{"-print": "\n", "-print0": "\x00"}[name]), nil
	case "-prune":
		return func(e *entry) bool { e.prune = true; return true }, nil
	case "-empty":
		return p.fd.isEmpty, nil
	}
	x, y, newer := newerName(name)
	if !newer && !strings.Contains(" -name -iname -path -ipath -wholename -type -size -maxdepth -mindepth -amin -atime -cmin -ctime -mmin -mtime -printf ", " "+name+" ") {
		return nil, usageErr("unknown predicate '%s'", name)
	}
	a, err := p.arg(name)
	if err != nil {
		return nil, err
	}
	if newer {
		return p.fd.newerTest(x, y, a)
	}
	switch name {
	case "-amin", "-atime", "-cmin", "-ctime", "-mmin", "-mtime":
		return p.fd.timeTest(name, a)
	case "-printf":
		p.action = true
		return p.fd.printfAction(a)
	case "-name", "-iname":
		return nameTest(a, name == "-iname")
	case "-path", "-ipath", "-wholename":
		fold := name == "-ipath"
		pat := foldCase(negation(a), fold)
		return func(e *entry) bool { return matchPath(pat, foldCase(e.path, fold)) }, nil
	case "-type":
		return typeTest(a)
	case "-size":
		return sizeTest(a)
	case "-maxdepth", "-mindepth":
		n, err := strconv.Atoi(a)
		if err != nil || n < 0 {
			return nil, usageErr("%s: want a number >= 0, not '%s'", name, a)
		}
		if name == "-maxdepth" {
			p.fd.maxdepth = n
		} else {
			p.fd.mindepth = n
		}
		return func(*entry) bool { return true }, nil
	}
	return nil, usageErr("unknown predicate '%s'", name)
}

func foldCase(s string, fold bool) string {
	if fold {
		return strings.ToLower(s)
	}
	return s
}

// nameTest is -name/-iname (leading dots match: GNU find since 4.2.2).
func nameTest(pat string, fold bool) (pred, error) {
	pat = foldCase(negation(pat), fold)
	if _, err := path.Match(pat, ""); err != nil {
		return nil, usageErr("bad pattern '%s'", pat)
	}
	return func(e *entry) bool {
		ok, _ := path.Match(pat, foldCase(path.Base(e.path), fold))
		return ok
	}, nil
}

// typeTest is -type with a comma list of f d l b c p s.
func typeTest(list string) (pred, error) {
	modes := map[byte]uint32{'f': syscall.S_IFREG, 'd': syscall.S_IFDIR, 'l': syscall.S_IFLNK, 'b': syscall.S_IFBLK, 'c': syscall.S_IFCHR, 'p': syscall.S_IFIFO, 's': syscall.S_IFSOCK}
	var want []uint32
	for _, t := range strings.Split(list, ",") {
		m, ok := uint32(0), false
		if len(t) == 1 {
			m, ok = modes[t[0]]
		}
		if !ok {
			return nil, usageErr("-type: unknown type '%s' (want f, d, l, b, c, p or s)", t)
		}
		want = append(want, m)
	}
	return func(e *entry) bool {
		for _, m := range want {
			if e.in.Mode&syscall.S_IFMT == m {
				return true
			}
		}
		return false
	}, nil
}

// sizeTest is -size [+-]N[cwbkMG]: the size is rounded up to whole units
// (512 bytes without a suffix) before comparing, as GNU find does, so
// -size -1M is only an empty file and -size 1k any file of 1 to 1024 bytes.
func sizeTest(a string) (pred, error) {
	bad := usageErr("-size: want [+-]N[cwbkMG], not '%s'", a)
	s := a
	cmp := byte(0)
	if s != "" && (s[0] == '+' || s[0] == '-') {
		cmp, s = s[0], s[1:]
	}
	unit := uint64(512)
	if i := len(s) - 1; i >= 0 {
		if u, ok := map[byte]uint64{'c': 1, 'w': 2, 'b': 512, 'k': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}[s[i]]; ok {
			unit, s = u, s[:i]
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return nil, bad
	}
	return func(e *entry) bool {
		units := e.in.Size / unit
		if e.in.Size%unit != 0 {
			units++
		}
		switch cmp {
		case '+':
			return units > n
		case '-':
			return units < n
		}
		return units == n
	}, nil
}

// printer is -print (sep "\n") or -print0 (sep NUL).
func (fd *finder) printer(sep string) pred {
	return func(e *entry) bool {
		fd.w.WriteString(e.path)
		fd.w.WriteString(sep)
		return true
	}
}
