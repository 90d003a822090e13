package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// quoting styles of ls (GNU --quoting-style): literal prints names as
// they are (the default when stdout is not a terminal); shell-escape
// quotes them so a terminal never interprets a byte of a name and a shell
// reads it back (the default on a terminal, as GNU ls does).
const (
	quoteLiteral = "literal"
	quoteShell   = "shell-escape"
)

// shellSpecial are the bytes that make a name need quotes anywhere;
// '#' and '~' only at the start, '{' and '}' only alone (gnulib's
// quotearg, which GNU ls uses).
const shellSpecial = " \t!\"$&'()*;<=>?[\\]^`|"

// shellQuote renders name for a terminal: as is when nothing in it needs
// quoting, in '...' when only shell-special bytes do, and with control
// bytes and invalid UTF-8 as $'\ooo' pieces (ESC becomes $'\033').
func shellQuote(name string) string {
	if name == "" {
		return "''"
	}
	plain, safe := true, true
	for i := 0; i < len(name); {
		r, n := utf8.DecodeRuneInString(name[i:])
		switch {
		case r == utf8.RuneError && n <= 1, r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
			safe = false
		case strings.ContainsRune(shellSpecial, r), i == 0 && (r == '#' || r == '~'), name == "{" || name == "}":
			plain = false
		}
		i += n
	}
	if plain && safe {
		return name
	}
	if safe {
		if strings.Contains(name, "'") && doubleQuotable(name) {
			return `"` + name + `"` // "it's", as GNU ls prints it
		}
		return "'" + strings.ReplaceAll(name, "'", `'\''`) + "'"
	}
	var b strings.Builder
	inQuote, inDollar := false, false
	closeAll := func() {
		if inQuote || inDollar {
			b.WriteByte('\'')
		}
		inQuote, inDollar = false, false
	}
	for i := 0; i < len(name); {
		r, n := utf8.DecodeRuneInString(name[i:])
		if (r == utf8.RuneError && n <= 1) || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			if !inDollar {
				closeAll()
				b.WriteString("$'")
				inDollar = true
			}
			for _, c := range []byte(name[i : i+n]) {
				b.WriteString(cEscape(c))
			}
		} else {
			if !inQuote {
				closeAll()
				b.WriteByte('\'')
				inQuote = true
			}
			if r == '\'' {
				b.WriteString(`'\''`)
			} else {
				b.WriteString(name[i : i+n])
			}
		}
		i += n
	}
	closeAll()
	return b.String()
}

// doubleQuotable reports whether name reads the same inside "..." in C
// and in a shell (gnulib's c_and_shell_quote_compat): letters, digits,
// space, ' and %+,-./:@]_, '#' and '~' only first, and printable
// non-ASCII; GNU ls then quotes a name with a ' as "it's".
func doubleQuotable(name string) bool {
	for i, r := range name {
		ok := r >= 0x80 || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' ||
			strings.ContainsRune(" '%+,-./:@]_", r) || i == 0 && (r == '#' || r == '~' || len(name) == 1)
		if !ok {
			return false
		}
	}
	return true
}

func cEscape(c byte) string {
	if e, ok := map[byte]string{7: `\a`, 8: `\b`, 9: `\t`, 10: `\n`, 11: `\v`, 12: `\f`, 13: `\r`}[c]; ok {
		return e
	}
	return fmt.Sprintf(`\%03o`, c)
}
