package batch

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupFiles are where Run finds its cgroup and the cgroup tree.
var cgroupFiles = [2]string{"/proc/self/cgroup", "/sys/fs/cgroup"}

// cgroupLimit is the memory limit of the process's cgroup (0: none or
// unknown), the smallest on the way from its cgroup to the root, so that
// a container's or a systemd unit's MemoryMax bounds the budget too.
// procFile is /proc/self/cgroup, root /sys/fs/cgroup; v2 (memory.max) and
// v1 (memory/.../memory.limit_in_bytes) hierarchies are read.
func cgroupLimit(procFile, root string) uint64 {
	f, err := os.Open(procFile)
	if err != nil {
		return 0
	}
	defer f.Close()
	var limit uint64
	sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			limit = minLimit(limit, walkLimit(root, parts[2], "memory.max"))
		case hasController(parts[1], "memory"):
			limit = minLimit(limit, walkLimit(filepath.Join(root, "memory"), parts[2], "memory.limit_in_bytes"))
		}
	}
	return limit
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// walkLimit is the smallest limit in file from root+path up to root (a
// container sees its own cgroup as the root; the path is the host's).
func walkLimit(root, path, file string) uint64 {
	var limit uint64
	for dir := filepath.Join(root, filepath.Clean("/"+path)); ; dir = filepath.Dir(dir) {
		limit = minLimit(limit, readLimit(filepath.Join(dir, file)))
		if len(dir) <= len(root) {
			return limit
		}
	}
}

// readLimit reads one limit file: a number of bytes, or "max" (v1's
// "no limit" is a number near 2^63): 0 for none.
func readLimit(p string) uint64 {
	b, err := os.ReadFile(p)
	if err != nil || len(b) > 64 {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n >= 1<<62 {
		return 0
	}
	return n
}

// minLimit is the smaller of two limits, 0 being none.
func minLimit(a, b uint64) uint64 {
	if a == 0 || b != 0 && b < a {
		return b
	}
	return a
}
