//go:build !ddfs_man

package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// genMan: the tools are built without the man page writer (cobra/doc and
// its markdown libraries: 0.5 MiB of heap made at start and their code in
// every run's memory); `make man` builds them with -tags ddfs_man.
func genMan(*cobra.Command, string) error {
	return errors.New("built without man pages: make man builds them (-tags ddfs_man)")
}
