package export

// Squashfs extended attributes: squashfs keeps user., trusted. and
// security. names (a type and the rest); an inode with any is an
// extended inode naming its set by index. Sets are kept once each: files
// with the same attributes (a rootfs's security labels) share one.

import (
	"encoding/binary"
	"fmt"
	"strings"
	"syscall"

	"github.com/ddfs/ddfs/format"
)

var sqXattrTypes = [...]string{"user.", "trusted.", "security."}

// sqXattrs is the attribute table being built.
type sqXattrs struct {
	kv    sqMeta
	ids   []byte            // id entries: pairs' reference, count, size
	index map[string]uint32 // a set's encoding -> its index
}

const sqNoXattr = 0xffffffff

// add returns the index of set xs (sqNoXattr for none), adding it once.
func (x *sqXattrs) add(p string, xs []format.Xattr) (uint32, error) {
	if len(xs) == 0 {
		return sqNoXattr, nil
	}
	le := binary.LittleEndian
	var pairs []byte
	for _, a := range xs {
		typ := -1
		for i, pre := range sqXattrTypes {
			if strings.HasPrefix(a.Name, pre) && len(a.Name) > len(pre) {
				typ = i
				break
			}
		}
		if typ < 0 {
			return 0, fmt.Errorf("%s: attribute %q: squashfs keeps only user., trusted. and security. names: %w", p, a.Name, syscall.EOPNOTSUPP)
		}
		name := a.Name[len(sqXattrTypes[typ]):]
		pairs = le.AppendUint16(le.AppendUint16(pairs, uint16(typ)), uint16(len(name)))
		pairs = append(le.AppendUint32(append(pairs, name...), uint32(len(a.Value))), a.Value...)
	}
	if i, ok := x.index[string(pairs)]; ok {
		return i, nil
	}
	if x.index == nil {
		x.index = map[string]uint32{}
	}
	i := uint32(len(x.index))
	x.index[string(pairs)] = i
	x.ids = le.AppendUint32(le.AppendUint32(le.AppendUint64(x.ids, x.kv.ref()), uint32(len(xs))), uint32(len(pairs)))
	x.kv.write(pairs)
	return i, nil
}

// writeTo writes the table at image offset at: the pairs' blocks, the
// id blocks, then the header (the pairs' start, the count) and the id
// blocks' offsets, which the superblock's xattr_id_table_start names.
// It returns that start and the bytes written.
func (x *sqXattrs) writeTo(s *sqWriter, at uint64) (start, n uint64, err error) {
	le := binary.LittleEndian
	kvLen, err := x.kv.writeTo(s.w)
	if err != nil {
		return 0, 0, err
	}
	hdr := le.AppendUint32(le.AppendUint32(le.AppendUint64(nil, at), uint32(len(x.index))), 0)
	start, idLen, err := s.table(at+uint64(kvLen), x.ids, 16, hdr)
	return start, uint64(kvLen) + idLen, err
}
