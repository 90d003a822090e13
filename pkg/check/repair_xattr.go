package check

// Fixes of XATTR_ITEMs, registered in the fix table (repair_trees.go).

// fixXattrHash moves an xattr under its name's hash.
func (f *fixer) fixXattrHash(p Problem) error {
	return f.rekeyXattr(p.Ino, p.fix.key, p.fix.name)
}
