package volume_test

import (
	"testing"

	"github.com/ddfs/ddfs/pkg/volume"
)

// TestHintPath: hints resolve against the set's folder; a network spec
// is never followed (an image must not make a tool dial an address it
// recorded), nor a relative hint of a set opened from a network device.
func TestHintPath(t *testing.T) {
	local := &volume.Volume{Dir: "/imgs"}
	remote := &volume.Volume{}
	for _, c := range []struct {
		v      *volume.Volume
		hint   string
		want   string
		follow bool
	}{
		{local, "b.img", "/imgs/b.img", true},
		{local, "/x/b.img", "/x/b.img", true},
		{local, "", "", false},
		{local, "nbd://10.0.0.1/e", "", false},
		{local, "nbd+unix:///e?socket=/run/s", "", false},
		{remote, "b.img", "", false},
		{remote, "/x/b.img", "/x/b.img", true},
	} {
		got, follow := c.v.HintPath(c.hint)
		if got != c.want || follow != c.follow {
			t.Errorf("dir %q hint %q: %q %v", c.v.Dir, c.hint, got, follow)
		}
	}
}
