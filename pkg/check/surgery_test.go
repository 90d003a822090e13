package check

import (
	"slices"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestFSSurgery damages one thing at a time and requires exactly the
// problems it causes.
func TestFSSurgery(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	if rep := fsckDevs(t, base, Options{}); !rep.Clean() {
		t.Fatalf("base image: %v", rep.Problems)
	}
	for _, tc := range surgeryCases() {
		t.Run(tc.name, func(t *testing.T) {
			s := newSurgeon(t, base)
			wants := tc.damage(s)
			expect(t, s.check(Options{}), wants...)
		})
	}
}

// surgeryCase damages one thing in a populated image and returns the
// problems that causes.
type surgeryCase struct {
	name   string
	damage func(s *surgeon) []want
}

func surgeryCases() []surgeryCase {
	// Each table is in the test file of the check it exercises.
	return slices.Concat(extentSurgery(), refSurgery(), inodeSurgery(), dirSurgery(), xattrSurgery(), itemSurgery(), extentItemSurgery(), csumSurgery())
}
