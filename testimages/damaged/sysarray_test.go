package damaged

import (
	"errors"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/testimages/damaged/corpus"
)

// TestSysArrayLieRefused: a system chunk array that differs from the
// chunk tree (a stripe offset moved, checksum recomputed) makes a
// writable open fail with ErrSysArray; a read-only open still works and
// says so through CheckSysChunks.
func TestSysArrayLieRefused(t *testing.T) {
	base, err := corpus.Base(1)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := corpus.Variants(base, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range vs {
		if !strings.HasPrefix(v.Name, "sysarray") || !strings.HasSuffix(v.Name, "offset+node") {
			continue
		}
		n++
		devs, err := corpus.Damage(base, v.Damage)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := openStore(corpus.Snapshots(devs), true); !errors.Is(err, store.ErrSysArray) {
			t.Errorf("%s: writable open: %v, want ErrSysArray", v.Name, err)
		}
		st, err := openStore(corpus.Snapshots(devs), false)
		if err != nil {
			continue // the lie may hide the chunk tree itself: refused either way
		}
		if !errors.Is(st.CheckSysChunks(), store.ErrSysArray) {
			t.Errorf("%s: read-only open does not report the mismatch", v.Name)
		}
		st.Close()
	}
	if n == 0 {
		t.Fatal("no sysarray variant")
	}
}
