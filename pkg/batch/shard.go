package batch

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// IndexEnv is where a Kubernetes Indexed Job puts a pod's index
// (--shard auto/N).
const IndexEnv = "JOB_COMPLETION_INDEX"

// CountEnv holds N for a bare --shard auto: Kubernetes exposes only the
// index, so a Job's manifest sets it to its completions.
const CountEnv = "JOB_COMPLETIONS"

// Shard is shard I of N (N 0: every set).
type Shard struct{ I, N int }

// ParseShard reads --shard: "I/N" (0 <= I < N), "auto/N" with I from
// $JOB_COMPLETION_INDEX, or "auto" with N from $JOB_COMPLETIONS too
// (getenv).
func ParseShard(s string, getenv func(string) string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	nWhat := "N"
	if !ok && s == "auto" {
		ns, nWhat = getenv(CountEnv), "$"+CountEnv
		if ns == "" {
			return Shard{}, fmt.Errorf("--shard auto: %s is not set (or give auto/N)", CountEnv)
		}
	} else if !ok {
		return Shard{}, fmt.Errorf("--shard %q: want I/N, auto/N or auto", s)
	}
	n, err := strconv.Atoi(ns)
	if err != nil || n < 1 {
		return Shard{}, fmt.Errorf("--shard %s: %s (%q) must be a positive number", s, nWhat, ns)
	}
	what := "I"
	if is == "auto" {
		is, what = getenv(IndexEnv), "$"+IndexEnv
		if is == "" {
			return Shard{}, fmt.Errorf("--shard %s: %s is not set", s, IndexEnv)
		}
	}
	i, err := strconv.Atoi(is)
	if err != nil || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("--shard %s: %s (%q) must be a number from 0 to %d", s, what, is, n-1)
	}
	return Shard{I: i, N: n}, nil
}

// Has reports whether set s falls in the shard: a hash of its UUID that
// does not depend on the machine, the list order or the other sets, so N
// workers given the same list split it without talking to each other.
func (sh Shard) Has(s *Set) bool {
	if sh.N <= 1 {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(s.key()))
	return h.Sum64()%uint64(sh.N) == uint64(sh.I)
}

// Filter keeps the sets of the shard, in order.
func (sh Shard) Filter(sets []*Set) []*Set {
	var out []*Set
	for _, s := range sets {
		if sh.Has(s) {
			out = append(out, s)
		}
	}
	return out
}
