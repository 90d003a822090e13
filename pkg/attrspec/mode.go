package attrspec

import (
	"fmt"
	"strconv"
	"strings"
)

// Mode bits chmod can change (permission, setuid, setgid, sticky).
const (
	setUID = 0o4000
	setGID = 0o2000
	sticky = 0o1000
	allRWX = 0o777
)

// ModeChange is a parsed chmod MODE: Apply gives the new permission bits.
type ModeChange struct {
	octal bool
	bits  uint32 // the octal value
	// keepDirIDs: an octal mode of at most 4 digits keeps a directory's
	// setuid/setgid bits (GNU chmod; "00755" clears them).
	keepDirIDs bool
	clauses    []clause
}

type clause struct {
	who uint32 // mask of the u, g, o bits named (0: none named, "a" masked by umask)
	ops []op
}

type op struct {
	op    byte   // '+', '-', '='
	perm  string // letters rwxXst, or one of u g o (copy)
	which byte   // the u/g/o to copy from, 0 if letters
}

// ParseMode reads a chmod MODE: octal (at most 07777), or symbolic
// clauses [ugoa]*([-+=]([rwxXst]*|[ugo]))+ separated by commas.
func ParseMode(s string) (*ModeChange, error) {
	if s == "" {
		return nil, fmt.Errorf("invalid mode: %q", s)
	}
	if s[0] >= '0' && s[0] <= '7' {
		n, err := strconv.ParseUint(s, 8, 32)
		if err != nil || len(s) > 12 || n > 0o7777 {
			return nil, fmt.Errorf("invalid mode: %q", s)
		}
		return &ModeChange{octal: true, bits: uint32(n), keepDirIDs: len(s) <= 4}, nil
	}
	m := &ModeChange{}
	for _, part := range strings.Split(s, ",") {
		c, err := parseClause(part)
		if err != nil {
			return nil, fmt.Errorf("invalid mode: %q", s)
		}
		m.clauses = append(m.clauses, c)
	}
	return m, nil
}

func parseClause(s string) (clause, error) {
	var c clause
	i := 0
	for ; i < len(s) && strings.IndexByte("ugoa", s[i]) >= 0; i++ {
		c.who |= map[byte]uint32{'u': 0o4700, 'g': 0o2070, 'o': 0o1007, 'a': 0o7777}[s[i]]
	}
	if i == len(s) {
		return c, fmt.Errorf("no operator")
	}
	for i < len(s) {
		if strings.IndexByte("+-=", s[i]) < 0 {
			return c, fmt.Errorf("bad operator")
		}
		o := op{op: s[i]}
		i++
		if i < len(s) && strings.IndexByte("ugo", s[i]) >= 0 {
			o.which = s[i]
			i++
		} else {
			j := i
			for i < len(s) && strings.IndexByte("rwxXst", s[i]) >= 0 {
				i++
			}
			o.perm = s[j:i]
		}
		c.ops = append(c.ops, o)
	}
	return c, nil
}

// Apply returns the permission bits (mode & 07777) after the change, for
// a file whose current bits are old; umask limits clauses that name no
// u/g/o/a, as chmod(1) says. A directory gains execute from X.
func (m *ModeChange) Apply(old uint32, isDir bool, umask uint32) uint32 {
	cur := old & 0o7777
	if m.octal {
		if isDir && m.keepDirIDs {
			return m.bits | cur&(setUID|setGID)
		}
		return m.bits
	}
	for _, c := range m.clauses {
		who, limit := c.who, uint32(0o7777)
		if who == 0 {
			who, limit = 0o7777, ^umask&0o7777
		}
		for _, o := range c.ops {
			bits := o.bitsFor(cur, isDir, who) & limit
			switch o.op {
			case '+':
				cur |= bits
			case '-':
				cur &^= bits
			case '=':
				// = clears what the clause names (setuid/setgid of
				// directories are kept, as GNU chmod does), then sets
				// (the umask limits only what is set).
				clear := who & (allRWX | setUID | setGID | sticky)
				if isDir {
					clear &^= setUID | setGID
				}
				cur = cur&^clear | bits
			}
		}
	}
	return cur
}

// bitsFor is the set of bits o names within who.
func (o op) bitsFor(cur uint32, isDir bool, who uint32) uint32 {
	var rwx uint32 // a pattern of rwx bits repeated in u, g and o
	var special uint32
	if o.which != 0 {
		shift := map[byte]uint{'u': 6, 'g': 3, 'o': 0}[o.which]
		rwx = (cur >> shift) & 7
	}
	for _, p := range o.perm {
		switch p {
		case 'r':
			rwx |= 4
		case 'w':
			rwx |= 2
		case 'x':
			rwx |= 1
		case 'X':
			if isDir || cur&0o111 != 0 {
				rwx |= 1
			}
		case 's':
			special |= setUID | setGID
		case 't':
			special |= sticky
		}
	}
	return (rwx<<6 | rwx<<3 | rwx | special) & who
}
