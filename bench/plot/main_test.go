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
