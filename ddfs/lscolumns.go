package main

import (
	"os"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/term"
	"golang.org/x/text/width"
)

// GNU ls -C: names down the columns, as many columns as fit the line,
// each as wide as its widest name plus two spaces, tabs for the runs of
// spaces (TABSIZE, default 8). The layout is coreutils' calculate_columns
// and print_many_per_line, so the output is byte-identical.

// minColumnWidth is one character of name and two of separation.
const minColumnWidth = 3

// maxColumns bounds the layout table (quadratic in the columns): a line
// of 3,000 cells holds no more.
const maxColumns = 1024

// lineWidth is the width of the line as GNU ls finds it: the terminal's
// (stdout), else $COLUMNS, else 80.
func lineWidth() int {
	if w, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil && w > 0 {
		return w
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 80
}

// tabSize is $TABSIZE (0: spaces only), default 8.
func tabSize() int {
	if n, err := strconv.Atoi(os.Getenv("TABSIZE")); err == nil && n >= 0 {
		return n
	}
	return 8
}

// displayWidth is how many terminal cells s takes.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case unicode.IsControl(r), unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
			// no cell (a control byte prints raw only when not quoted)
		case width.LookupRune(r).Kind() == width.EastAsianWide, width.LookupRune(r).Kind() == width.EastAsianFullwidth:
			n += 2
		default:
			n++
		}
	}
	return n
}

// columnLayout returns the number of columns for cells of widths w on a
// line of lineLen, and each column's width.
func columnLayout(w []int, lineLen int) (int, []int) {
	n := len(w)
	maxCols := lineLen / minColumnWidth
	if lineLen%minColumnWidth != 0 {
		maxCols++
	}
	maxCols = min(max(maxCols, 1), n, maxColumns)
	type layout struct {
		valid   bool
		lineLen int
		cols    []int
	}
	ls := make([]layout, maxCols)
	for i := range ls {
		ls[i] = layout{valid: true, lineLen: (i + 1) * minColumnWidth, cols: make([]int, i+1)}
		for j := range ls[i].cols {
			ls[i].cols[j] = minColumnWidth
		}
	}
	for f, fw := range w {
		for i := range ls {
			l := &ls[i]
			if !l.valid {
				continue
			}
			idx := f / ((n + i) / (i + 1))
			real := fw
			if idx != i {
				real += 2
			}
			if l.cols[idx] < real {
				l.lineLen += real - l.cols[idx]
				l.cols[idx] = real
				l.valid = l.lineLen < lineLen
			}
		}
	}
	cols := maxCols
	for cols > 1 && !ls[cols-1].valid {
		cols--
	}
	return cols, ls[cols-1].cols
}

// columns writes cells down the columns of a line of lineLen.
func columns(b *strings.Builder, cells []string, lineLen, tab int) {
	if len(cells) == 0 {
		return
	}
	w := make([]int, len(cells))
	for i, c := range cells {
		w[i] = displayWidth(c)
	}
	cols, cw := columnLayout(w, lineLen)
	rows := (len(cells) + cols - 1) / cols
	for row := 0; row < rows; row++ {
		pos := 0
		for col, f := 0, row; ; col++ {
			b.WriteString(cells[f])
			f += rows
			if f >= len(cells) {
				break
			}
			indent(b, pos+w[f-rows], pos+cw[col], tab)
			pos += cw[col]
		}
		b.WriteByte('\n')
	}
}

// indent pads from column from to column to with tabs where a tab stop
// falls within, else spaces (coreutils' indent).
func indent(b *strings.Builder, from, to, tab int) {
	for from < to {
		if tab != 0 && to/tab > (from+1)/tab {
			b.WriteByte('\t')
			from += tab - from%tab
		} else {
			b.WriteByte(' ')
			from++
		}
	}
}
