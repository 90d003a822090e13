package attrspec

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Accounts maps user and group names to ids, read from passwd(5) and
// group(5) files; the zero value knows no names (numbers only).
type Accounts struct {
	users  map[string]account
	groups map[string]uint32
	uname  map[uint32]string
	gname  map[uint32]string
}

type account struct{ uid, gid uint32 }

// maxAccounts bounds the entries read from one file (hostile images).
const maxAccounts = 1 << 20

// ParseAccounts reads passwd and group contents (either may be nil).
// Malformed lines are skipped, as getpwnam does.
func ParseAccounts(passwd, group []byte) *Accounts {
	a := &Accounts{users: map[string]account{}, groups: map[string]uint32{}, uname: map[uint32]string{}, gname: map[uint32]string{}}
	eachLine(passwd, func(f []string) {
		if len(f) < 4 {
			return
		}
		u, err1 := strconv.ParseUint(f[2], 10, 32)
		g, err2 := strconv.ParseUint(f[3], 10, 32)
		if err1 != nil || err2 != nil || f[0] == "" {
			return
		}
		if _, dup := a.users[f[0]]; !dup {
			a.users[f[0]] = account{uint32(u), uint32(g)}
		}
		if _, dup := a.uname[uint32(u)]; !dup {
			a.uname[uint32(u)] = f[0]
		}
	})
	eachLine(group, func(f []string) {
		if len(f) < 3 {
			return
		}
		g, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil || f[0] == "" {
			return
		}
		if _, dup := a.groups[f[0]]; !dup {
			a.groups[f[0]] = uint32(g)
		}
		if _, dup := a.gname[uint32(g)]; !dup {
			a.gname[uint32(g)] = f[0]
		}
	})
	return a
}

func eachLine(b []byte, fn func([]string)) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<10)
	for n := 0; sc.Scan() && n < maxAccounts; n++ {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		fn(strings.Split(line, ":"))
	}
}

// UserName is the name of uid, or its number.
func (a *Accounts) UserName(uid uint32) string {
	if n, ok := a.uname[uid]; ok {
		return n
	}
	return strconv.FormatUint(uint64(uid), 10)
}

// GroupName is the name of gid, or its number.
func (a *Accounts) GroupName(gid uint32) string {
	if n, ok := a.gname[gid]; ok {
		return n
	}
	return strconv.FormatUint(uint64(gid), 10)
}

// Owner is a parsed chown OWNER[:GROUP]; nil fields are left alone.
type Owner struct {
	UID, GID *uint32
}

// ParseOwner reads OWNER, OWNER:GROUP, OWNER: (the owner's login group),
// :GROUP or OWNER.GROUP (the old form, when the name has no dot) as GNU
// chown does: a name first, then a number; "+N" is always a number.
func (a *Accounts) ParseOwner(s string) (Owner, error) {
	user, group, hasSep := strings.Cut(s, ":")
	if !hasSep && strings.Contains(s, ".") {
		if _, known := a.lookupUser(s); !known {
			user, group, hasSep = strings.Cut(s, ".")
		}
	}
	var o Owner
	if user != "" {
		acc, err := a.user(user)
		if err != nil {
			return o, err
		}
		o.UID = &acc.uid
		if hasSep && group == "" {
			if _, known := a.lookupUser(user); !known {
				return o, fmt.Errorf("%q: a numeric owner has no login group", s)
			}
			o.GID = &acc.gid
		}
	}
	if group != "" {
		g, err := a.group(group)
		if err != nil {
			return o, err
		}
		o.GID = &g
	}
	if o.UID == nil && o.GID == nil && s != ":" && s != "" {
		return o, fmt.Errorf("invalid spec: %q", s)
	}
	return o, nil
}

func (a *Accounts) lookupUser(name string) (account, bool) {
	acc, ok := a.users[name]
	return acc, ok
}

func (a *Accounts) user(name string) (account, error) {
	if acc, ok := a.users[name]; ok && name[0] != '+' {
		return acc, nil
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(name, "+"), 10, 32)
	if err != nil {
		return account{}, fmt.Errorf("invalid user: %q", name)
	}
	return account{uid: uint32(n)}, nil
}

func (a *Accounts) group(name string) (uint32, error) {
	if g, ok := a.groups[name]; ok && name[0] != '+' {
		return g, nil
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(name, "+"), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("invalid group: %q", name)
	}
	return uint32(n), nil
}
