package main

import "testing"

// A point measured again in a later CSV replaces the earlier one; other
// points of both files are kept.
func TestMergeLaterWins(t *testing.T) {
	a := []point{{kind: "files", row: "build", tool: "ddfs", items: 1e4, perItem: 1}, {kind: "files", row: "build", tool: "ddfs", items: 1e5, perItem: 2}}
	b := []point{{kind: "files", row: "build", tool: "ddfs", items: 1e5, perItem: 3}, {kind: "files", row: "build", tool: "ddfs", items: 1e6, perItem: 4}}
	got := merge(a, b)
	want := map[float64]float64{1e4: 1, 1e5: 3, 1e6: 4}
	if len(got) != len(want) {
		t.Fatalf("%d points, want %d: %+v", len(got), len(want), got)
	}
	for _, p := range got {
		if want[p.items] != p.perItem {
			t.Fatalf("point at %g: %g, want %g", p.items, p.perItem, want[p.items])
		}
	}
}

// A row measured at one size only still gets a log x axis with a range
// (gonum panics drawing an empty one).
func TestRowPlotOneSize(t *testing.T) {
	pts := []point{{kind: "data", row: "df", tool: "ddfs", items: 1, perItem: 0.2, rssMiB: 11}}
	p, err := rowPlot(pts, "data", "df", "GiB", "s per GiB", func(p point) float64 { return p.perItem })
	if err != nil || p == nil {
		t.Fatal(p, err)
	}
	if !(p.X.Min > 0 && p.X.Min < 1 && p.X.Max > 1) {
		t.Fatalf("x axis [%g, %g] around 1", p.X.Min, p.X.Max)
	}
	if err := drawAll(pts, t.TempDir()); err != nil {
		t.Fatal(err)
	}
}
