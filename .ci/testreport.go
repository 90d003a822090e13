//go:build ignore

// testreport reads `go test -json` on stdin and prints what go test
// prints without -json (each failed test's output with its "--- FAIL"
// line, the "ok"/"FAIL" line of each package, build errors), then every
// skipped test with its reason. Under CI=true it exits 1 when a test
// skipped that the allow-list file does not name: CI promises root, loop
// devices, /dev/fuse and nbdkit, so a skip there is coverage lost.
// go test's own exit status is the caller's to keep (make test: pipefail).
//
// Usage: go test -json ./... | go run .ci/testreport.go [-allow FILE]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type skip struct{ pkg, test, reason string }

// report holds each running test's output until it ends: printed if it
// failed (or never ended: the binary died), kept as the reason if it
// skipped, dropped if it passed.
type report struct {
	out     io.Writer
	pending map[string][]string // package + " " + test -> output lines
	skips   []skip
}

func (r *report) event(e event) {
	key := e.Package + " " + e.Test
	switch {
	case e.Action == "build-output":
		fmt.Fprint(r.out, e.Output)
	case e.Test == "" && e.Action == "output":
		if strings.HasPrefix(e.Output, "FAIL") {
			r.flushUnfinished(e.Package)
		}
		if e.Output != "PASS\n" {
			fmt.Fprint(r.out, e.Output)
		}
	case e.Test == "":
	case e.Action == "output":
		r.pending[key] = append(r.pending[key], e.Output)
	case e.Action == "fail":
		r.print(key)
	case e.Action == "skip":
		r.skips = append(r.skips, skip{e.Package, e.Test, reason(r.pending[key])})
		delete(r.pending, key)
	case e.Action == "pass":
		delete(r.pending, key)
	}
}

// print writes a test's output as go test without -v shows it.
func (r *report) print(key string) {
	for _, l := range r.pending[key] {
		if !strings.HasPrefix(l, "=== ") {
			fmt.Fprint(r.out, l)
		}
	}
	delete(r.pending, key)
}

func (r *report) flushUnfinished(pkg string) {
	var keys []string
	for k := range r.pending {
		if strings.HasPrefix(k, pkg+" ") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		r.print(k)
	}
}

// reason is a skipped test's log: its lines but the framing.
func reason(lines []string) string {
	var r []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- SKIP") {
			r = append(r, l)
		}
	}
	if len(r) == 0 {
		return "(no reason given)"
	}
	return strings.Join(r, " | ")
}

// allowed reads the allow-list: a test name (as go test -run names it)
// first on each line, then why it may skip on CI; # starts a comment.
func allowed(path string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) == 1 {
			return nil, fmt.Errorf("%s: %s: say why it may skip on CI", path, f[0])
		}
		m[f[0]] = true
	}
	return m, nil
}

func main() {
	allowFile := flag.String("allow", ".ci/skips-allowed", "tests that may skip under CI=true, each with why")
	flag.Parse()
	r := &report{out: os.Stdout, pending: map[string][]string{}}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Println(sc.Text()) // not an event: go's own message
			continue
		}
		r.event(e)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "testreport: reading go test -json: %v\n", err)
		os.Exit(2)
	}
	os.Exit(r.summary(os.Getenv("CI") == "true", *allowFile))
}

// summary lists the skipped tests and, on CI, fails on any not allowed.
func (r *report) summary(ci bool, allowFile string) int {
	fmt.Fprintf(r.out, "skipped tests: %d\n", len(r.skips))
	for _, s := range r.skips {
		fmt.Fprintf(r.out, "  %s %s: %s\n", s.pkg, s.test, s.reason)
	}
	if !ci {
		return 0
	}
	ok, err := allowed(allowFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testreport: %v\n", err)
		return 2
	}
	bad := 0
	for _, s := range r.skips {
		if !ok[s.test] {
			fmt.Fprintf(r.out, "testreport: %s %s skipped on CI (CI=true), and %s does not allow it: %s\n", s.pkg, s.test, allowFile, s.reason)
			bad++
		}
	}
	if bad > 0 {
		fmt.Fprintf(r.out, "FAIL: %d tests skipped that CI promises to run\n", bad)
		return 1
	}
	return 0
}
