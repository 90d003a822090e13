// Command fsck.ddfs checks a ddfs filesystem.
package main

import (
	// Writable opens replay a pending fsync log (FORMAT.md §3.10); the
	// replayer knows files, so it lives in fsys.
	_ "github.com/ddfs/ddfs/pkg/fsys"

	"os"

	"github.com/ddfs/ddfs/pkg/cli"
)

func main() {
	cli.SoftMemoryLimit(160 << 20)
	stop := cli.Profile()
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
