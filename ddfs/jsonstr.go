package main

import (
	"encoding/base64"
	"encoding/json"
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
