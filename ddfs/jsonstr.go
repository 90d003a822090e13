package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ddfs/ddfs/pkg/fsys"
)

// jstr is a byte string from the image (a name, path, link target or
// xattr value) in --json output: a JSON string when it is valid UTF-8,
// else {"base64": "..."} with the exact bytes (docs/json.md), so no
// output ever carries U+FFFD for a byte it could not encode.
type jstr string

func (s jstr) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(s)) {
		return json.Marshal(string(s))
	}
	return json.Marshal(struct {
		Base64 string `json:"base64"`
	}{base64.StdEncoding.EncodeToString([]byte(s))})
}

// xattrJSON is one extended attribute in --json output.
type xattrJSON struct {
	Name  jstr `json:"name"`
	Value jstr `json:"value"`
}

// xattrsJSON lists an inode's xattrs for --json (nil when it has none).
func xattrsJSON(f *fsys.FS, in *fsys.Inode) ([]xattrJSON, error) {
	xs, err := f.ListXattrs(in)
	if err != nil {
		return nil, err
	}
	var out []xattrJSON
	for _, x := range xs {
		out = append(out, xattrJSON{Name: jstr(x.Name), Value: jstr(x.Value)})
	}
	return out, nil
}

// xattrText renders a value as getfattr does: "text" in double quotes
// (\ and " escaped) when it is printable UTF-8, else 0s and base64.
func xattrText(v string) string {
	if !utf8.ValidString(v) {
		return "0s" + base64.StdEncoding.EncodeToString([]byte(v))
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return "0s" + base64.StdEncoding.EncodeToString([]byte(v))
		}
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

// xattrValue reads a value as setfattr -v does, so what xattr list
// prints sets the same bytes back: 0x... hex, 0s... base64, "..." text
// with \\, \" and \ooo escapes; anything else is the text itself.
func xattrValue(s string) ([]byte, error) {
	if len(s) >= 2 && s[0] == '0' {
		switch s[1] {
		case 'x', 'X':
			b, err := hex.DecodeString(s[2:])
			if err != nil {
				return nil, usageErr("value %q: bad hex after 0x: %v", s, err)
			}
			return b, nil
		case 's', 'S':
			b, err := base64.StdEncoding.DecodeString(s[2:])
			if err != nil {
				return nil, usageErr("value %q: bad base64 after 0s: %v", s, err)
			}
			return b, nil
		}
	}
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return []byte(s), nil
	}
	var b []byte
	for i := 1; i < len(s)-1; i++ {
		c := s[i]
		if c == '\\' {
			switch {
			case i+1 < len(s)-1 && (s[i+1] == '\\' || s[i+1] == '"'):
				c = s[i+1]
				i++
			case i+3 < len(s)-1 && isOctal(s[i+1:i+4]):
				n, _ := strconv.ParseUint(s[i+1:i+4], 8, 8)
				c = byte(n)
				i += 3
			default:
				return nil, usageErr("value %q: bad escape at byte %d", s, i)
			}
		}
		b = append(b, c)
	}
	return b, nil
}

// isOctal reports whether s is three octal digits of a byte (\000-\377).
func isOctal(s string) bool {
	return s[0] >= '0' && s[0] <= '3' && s[1] >= '0' && s[1] <= '7' && s[2] >= '0' && s[2] <= '7'
}
