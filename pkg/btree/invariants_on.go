//go:build ddfs_invariants

package btree

// checkInvariants turns on expensive self-checks (make test sets the tag).
const checkInvariants = true
