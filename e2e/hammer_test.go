package e2e

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// TestHammer: several processes write and read one image at once. Without
// --wait a busy image fails fast with the busy error; with --wait every
// command succeeds. Exactly one writer runs at a time, so the image ends
// clean and holds every file the successful commands made.
func TestHammer(t *testing.T) {
	rounds := 150
	if os.Getenv("DDFS_STRESS") != "" {
		rounds = 1000
	}
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "disk.img"), 0)
	var mu sync.Mutex
	made := map[string]bool{}
	busy := 0
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				name := fmt.Sprintf("disk.img:/w%d-%d", w, i)
				args := []string{"touch", name}
				if w%2 == 0 {
					args = []string{"touch", "--wait", name} // waits its turn
				}
				r := run(t, dir, "ddfs", args...)
				mu.Lock()
				switch {
				case r.code == 0:
					made[name] = true
				case w%2 == 1 && strings.Contains(r.stderr, "is in use by"):
					busy++
				default:
					t.Errorf("%v: exit %d %q", args, r.code, r.stderr)
				}
				mu.Unlock()
			}
		}(w)
	}
	for rd := 0; rd < 2; rd++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				r := run(t, dir, "ddfs", "ls", "--wait", "disk.img:/")
				if r.code != 0 {
					t.Errorf("reader: exit %d %q", r.code, r.stderr)
				}
			}
		}()
	}
	wg.Wait()
	must(t, run(t, dir, "fsck.ddfs", "disk.img"), 0)
	ls := must(t, run(t, dir, "ddfs", "ls", "disk.img:/"), 0).stdout
	for name := range made {
		if !strings.Contains(ls, strings.TrimPrefix(name, "disk.img:/")+"\n") {
			t.Fatalf("%s reported success but is missing", name)
		}
	}
	t.Logf("%d commands succeeded, %d failed fast as busy", len(made), busy)
}
