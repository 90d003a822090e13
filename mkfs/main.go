// Command mkfs.ddfs creates a ddfs filesystem on image files or devices.
package main

import (
	"io"
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

func run(args []string, stdout, stderr io.Writer) int {
	return cli.Execute(newRoot(), args, stdout, stderr)
}
