package fusefs

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// The server clears set-user-ID and set-group-ID bits itself
// (CAP_HANDLE_KILLPRIV_V2): the kernel then marks the superblock SB_NOSEC
// and stops asking for security.capability (a GETXATTR round trip) before
// every write; it still sends the capability's removal when there is one.
// It flags a write or truncate whose caller lacks CAP_FSETID
// (WRITE_KILL_SUIDGID, FATTR_KILL_SUIDGID) and every chown of a
// non-directory (FATTR_KILL_SUIDGID). O_TRUNC at open comes as a
// setattr of the size (no atomic O_TRUNC here), so OPEN_KILL_SUIDGID
// never comes.
const capKillprivV2 = fuse.CAP_HANDLE_KILLPRIV_V2

// killprivFS turns a flagged write into a setattr that clears the bits
// first (go-fuse's node API does not pass the write flags on).
type killprivFS struct{ fuse.RawFileSystem }

func (k killprivFS) killFor(cancel <-chan struct{}, in *fuse.WriteIn) fuse.Status {
	if in.WriteFlags&fuse.WRITE_KILL_SUIDGID == 0 {
		return fuse.OK
	}
	sa := fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{InHeader: in.InHeader, Valid: fuse.FATTR_KILL_SUIDGID}}
	var out fuse.AttrOut
	return k.RawFileSystem.SetAttr(cancel, &sa, &out)
}

func (k killprivFS) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	if st := k.killFor(cancel, in); st != fuse.OK {
		return 0, st
	}
	return k.RawFileSystem.Write(cancel, in, data)
}

func (k killprivFS) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	if st := k.killFor(cancel, in); st != fuse.OK {
		return 0, st
	}
	return k.RawFileSystem.Writev(cancel, in, data)
}

// killedMode is mode after a FATTR_KILL_SUIDGID by caller, as the
// kernel's VFS computes it (setattr_should_drop_sgid): no set-user-ID;
// no set-group-ID where it means that (group execute set) or where the
// caller is neither root nor of the file's group (gid; supplementary
// groups are not known here); directories keep theirs.
func killedMode(mode, gid uint32, caller fuse.Caller) uint32 {
	if mode&syscall.S_IFMT == syscall.S_IFDIR {
		return mode
	}
	mode &^= syscall.S_ISUID
	if mode&syscall.S_IXGRP != 0 || caller.Uid != 0 && caller.Gid != gid {
		mode &^= syscall.S_ISGID
	}
	return mode
}
