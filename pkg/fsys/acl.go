package fsys

import "syscall"

// ErrNoACL refuses a POSIX ACL xattr. ACLs are not implemented (a later
// feature): stored as a plain xattr an ACL would change no mode and grant
// nothing, and tools that set one to set the mode (cp -a, cp -p) fall
// back to chmod on EOPNOTSUPP, as on a filesystem mounted without acl.
var ErrNoACL error = noACL{}

type noACL struct{}

// Error says it in coreutils' words ("Operation not supported").
func (noACL) Error() string {
	return "POSIX ACLs are not supported (chmod sets the mode): Operation not supported"
}

func (noACL) Unwrap() error { return syscall.EOPNOTSUPP }

// IsACLXattr reports whether name is one of the xattrs the kernel keeps
// POSIX ACLs in.
func IsACLXattr(name string) bool {
	return name == "system.posix_acl_access" || name == "system.posix_acl_default"
}
