// Command plot draws the curves of bench/scale.sh from its CSV: time per
// item and peak RSS against the data set's size (log x), one line per
// tool, for the small-files points (per file) and the data points (per
// GiB) of each row. gonum.org/v1/plot is maintained, pure Go and writes
// SVG without a browser or a C library.
//
//	go run ./bench/plot [-o DIR] FILE.csv...
//
// Several CSVs (runs of different points) are drawn together; a point
// measured in more than one (same kind, row, tool and size) is taken
// from the last file named.
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// point is one CSV row: a tool's median time and worst-run RSS for one
// row at one size.
type point struct {
	kind, row, tool string
	items           float64 // files, or GiB
	perItem, rssMiB float64
}

func main() {
	out := flag.String("o", "bench/results", "folder for the SVG files")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: plot [-o DIR] FILE.csv...")
		os.Exit(2)
	}
	var pts []point
	var err error
	for _, f := range flag.Args() {
		var more []point
		if more, err = read(f); err != nil {
			break
		}
		pts = merge(pts, more)
	}
	if err == nil {
		err = drawAll(pts, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}

// read parses the CSV header names the columns; rows whose time or RSS
// was not measured ("-" or FAIL) are left out, never drawn as zero.
func read(path string) ([]point, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, c := range []string{"kind", "row", "tool", "items", "per_item", "peak_rss_kib"} {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%s: no column %q", path, c)
		}
	}
	var pts []point
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return pts, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		items, e1 := strconv.ParseFloat(rec[col["items"]], 64)
		per, e2 := strconv.ParseFloat(rec[col["per_item"]], 64)
		rss, e3 := strconv.ParseFloat(rec[col["peak_rss_kib"]], 64)
		if e1 != nil || e2 != nil || items <= 0 {
			continue
		}
		if e3 != nil {
			rss = -1
		}
		pts = append(pts, point{kind: rec[col["kind"]], row: rec[col["row"]], tool: rec[col["tool"]], items: items, perItem: per, rssMiB: rss / 1024})
	}
}

// merge adds more to pts; a point of more replaces one of pts measured
// for the same kind, row, tool and size.
func merge(pts, more []point) []point {
	type id struct {
		kind, row, tool string
		items           float64
	}
	at := map[id]int{}
	for i, p := range pts {
		at[id{p.kind, p.row, p.tool, p.items}] = i
	}
	for _, p := range more {
		if i, ok := at[id{p.kind, p.row, p.tool, p.items}]; ok {
			pts[i] = p
			continue
		}
		at[id{p.kind, p.row, p.tool, p.items}] = len(pts)
		pts = append(pts, p)
	}
	return pts
}

// drawAll writes, per kind (files, data) and measure, one SVG with a panel
// per row.
func drawAll(pts []point, dir string) error {
	for _, kind := range []string{"files", "data"} {
		unit := map[string]string{"files": "µs per file", "data": "s per GiB"}[kind]
		xlab := map[string]string{"files": "files", "data": "GiB"}[kind]
		rows := rowsOf(pts, kind)
		if len(rows) == 0 {
			continue
		}
		for _, m := range []struct {
			name, label string
			get         func(point) float64
		}{
			{"time", unit, func(p point) float64 { return p.perItem }},
			{"rss", "peak RSS MiB", func(p point) float64 { return p.rssMiB }},
		} {
			path := filepath.Join(dir, fmt.Sprintf("scale-%s-%s.svg", kind, m.name))
			if err := panels(pts, kind, rows, xlab, m.label, m.get, path); err != nil {
				return err
			}
			fmt.Println("wrote", path)
		}
	}
	return nil
}

func rowsOf(pts []point, kind string) []string {
	seen := map[string]bool{}
	var rows []string
	for _, p := range pts {
		if p.kind == kind && !seen[p.row] {
			seen[p.row] = true
			rows = append(rows, p.row)
		}
	}
	return rows
}

// panels lays out one small plot per row, 3 across, into one SVG.
func panels(pts []point, kind string, rows []string, xlab, ylab string, get func(point) float64, path string) error {
	const across = 3
	down := (len(rows) + across - 1) / across
	w, h := vg.Length(across)*9*vg.Centimeter, vg.Length(down)*7*vg.Centimeter
	c := newCanvas(w, h)
	for i, row := range rows {
		p, err := rowPlot(pts, kind, row, xlab, ylab, get)
		if err != nil {
			return err
		}
		if p == nil {
			continue // nothing measured in this row
		}
		x, y := vg.Length(i%across)*9*vg.Centimeter, h-vg.Length(i/across+1)*7*vg.Centimeter
		p.Draw(c.sub(x, y, 9*vg.Centimeter, 7*vg.Centimeter))
	}
	return c.save(path)
}

func rowPlot(pts []point, kind, row, xlab, ylab string, get func(point) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = row
	p.X.Label.Text, p.Y.Label.Text = xlab, ylab
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	byTool := map[string]plotter.XYs{}
	var tools []string
	for _, q := range pts {
		if q.kind != kind || q.row != row || get(q) < 0 {
			continue
		}
		if _, ok := byTool[q.tool]; !ok {
			tools = append(tools, q.tool)
		}
		byTool[q.tool] = append(byTool[q.tool], plotter.XY{X: q.items, Y: get(q)})
	}
	if len(tools) == 0 {
		return nil, nil
	}
	sort.Strings(tools)
	for i, t := range tools {
		xy := byTool[t]
		sort.Slice(xy, func(a, b int) bool { return xy[a].X < xy[b].X })
		l, s, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", row, t, err)
		}
		l.Color = plotutil.Color(i)
		s.Color = l.Color
		if t == "ddfs" {
			l.Width = vg.Points(2.5)
			l.Color = color.RGBA{R: 200, A: 255}
			s.Color = l.Color
		}
		p.Add(l, s)
		p.Legend.Add(t, l, s)
	}
	if p.X.Min == p.X.Max {
		// One size measured: a log axis needs a range (gonum panics on an
		// empty one), so the point sits in the middle of a decade each way.
		p.X.Min, p.X.Max = p.X.Min/10, p.X.Max*10
	}
	return p, nil
}
