// Command dedupe-tool is a placeholder until its issue lands; it prints usage.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "-h" || os.Args[1] == "--help") {
		fmt.Println("Usage: dedupe-tool ... (not implemented yet: see the project's issues)")
		return
	}
	fmt.Fprintln(os.Stderr, "dedupe-tool: not implemented yet")
	os.Exit(1)
}
