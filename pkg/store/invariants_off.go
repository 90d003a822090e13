//go:build !ddfs_invariants

package store

const checkInvariants = false
