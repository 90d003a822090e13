package format

import (
	"math/rand/v2"
	"testing"
)

// TestNodeItemEdits: the edit methods keep UsedBytes equal to the sum over
// the items, from a literal (uncounted) leaf on; a direct edit after that
// shows as CountDrift.
func TestNodeItemEdits(t *testing.T) {
	n := testLeaf()
	if n.UsedBytes() != n.SumUsedBytes() || n.CountDrift() {
		t.Fatal("an uncounted leaf is not summed")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for op := range 2000 {
		switch i := r.IntN(len(n.Items) + 1); {
		case r.IntN(3) == 0 && len(n.Items) > 0:
			n.DeleteItem(min(i, len(n.Items)-1))
		case r.IntN(2) == 0 && i < len(n.Items):
			n.SetItemData(i, make([]byte, r.IntN(300)))
		case r.IntN(50) == 0:
			n.SetItems(append([]Item(nil), n.Items[:i]...))
		default:
			n.InsertItem(i, Item{Data: make([]byte, r.IntN(300))})
		}
		if got, want := n.UsedBytes(), n.SumUsedBytes(); got != want || n.CountDrift() {
			t.Fatalf("op %d: UsedBytes %d, items take %d", op, got, want)
		}
	}
	if len(n.Items) == 0 {
		n.InsertItem(0, Item{})
	}
	n.Items[0].Data = append(n.Items[0].Data, 1)
	if !n.CountDrift() {
		t.Fatal("a direct edit after counting is not seen as drift")
	}
}
