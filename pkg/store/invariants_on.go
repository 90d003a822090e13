//go:build ddfs_invariants

package store

// checkInvariants turns on expensive self-checks (make test sets the tag).
const checkInvariants = true
