//go:build !ddfs_invariants

package btree

const checkInvariants = false
