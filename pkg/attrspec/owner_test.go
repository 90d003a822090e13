package attrspec

import "testing"

const passwd = `root:x:0:0:root:/root:/bin/sh
# a comment
daemon:x:1:1::/:/usr/sbin/nologin
me:x:1000:1001:Me,,,:/home/me:/bin/bash
broken line
bad:x:notanumber:1::/:
1234:x:77:78::/:
first.last:x:2000:2000::/:
root:x:9:9:duplicate::
`

const group = `root:x:0:
users:x:100:me
me:x:1001:
staff:x:50:
`

func TestParseOwner(t *testing.T) {
	a := ParseAccounts([]byte(passwd), []byte(group))
	for _, c := range []struct {
		spec     string
		uid, gid int64 // -1: left alone
	}{
		{"root", 0, -1}, {"me", 1000, -1}, {"me:", 1000, 1001}, {"me:users", 1000, 100}, {":staff", -1, 50},
		{"1000", 1000, -1}, {"55:66", 55, 66}, {"me:66", 1000, 66}, {":", -1, -1},
		{"1234", 77, -1},    // a name first, as chown does
		{"+1234", 1234, -1}, // + forces a number
		{"me.users", 1000, 100}, {"first.last", 2000, -1}, {"daemon:root", 1, 0},
	} {
		o, err := a.ParseOwner(c.spec)
		if err != nil {
			t.Errorf("ParseOwner(%q): %v", c.spec, err)
			continue
		}
		if got := val(o.UID); got != c.uid {
			t.Errorf("ParseOwner(%q) uid = %d, want %d", c.spec, got, c.uid)
		}
		if got := val(o.GID); got != c.gid {
			t.Errorf("ParseOwner(%q) gid = %d, want %d", c.spec, got, c.gid)
		}
	}
	for _, bad := range []string{"nobody", "me:nogroup", "bad", "55:", "-1", "4294967296", "me:users:x"} {
		if o, err := a.ParseOwner(bad); err == nil {
			t.Errorf("ParseOwner(%q) accepted: uid %d gid %d", bad, val(o.UID), val(o.GID))
		}
	}
	if a.UserName(1000) != "me" || a.UserName(0) != "root" || a.UserName(4242) != "4242" || a.GroupName(100) != "users" || a.GroupName(7) != "7" {
		t.Errorf("names: %s %s %s %s %s", a.UserName(1000), a.UserName(0), a.UserName(4242), a.GroupName(100), a.GroupName(7))
	}
	var none Accounts
	if o, err := none.ParseOwner("12:34"); err != nil || *o.UID != 12 || *o.GID != 34 || none.UserName(5) != "5" {
		t.Errorf("no accounts: %v %v", o, err)
	}
}

func val(p *uint32) int64 {
	if p == nil {
		return -1
	}
	return int64(*p)
}
