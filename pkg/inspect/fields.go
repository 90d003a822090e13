package inspect

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
)

// OnDisk shows an on-disk structure of package format (a key, an item)
// in JSON with its fields named as FORMAT.md names them: snake_case, in
// declaration order (docs/json.md, "On-disk fields"). A 16-byte array is
// a UUID ("8c9a3e3e-..."), another byte array (a hash) hex; a byte slice
// or string is a JSON string when it is UTF-8, else {"base64": ...} (as
// every --json byte string); other values are encoded as encoding/json
// encodes them.
type OnDisk struct{ V any }

// MarshalJSON implements json.Marshaler.
func (o OnDisk) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	err := writeFields(&b, reflect.ValueOf(o.V))
	return b.Bytes(), err
}

// fieldNames are the FORMAT.md names snake_case does not give.
var fieldNames = map[string]string{"NBytes": "nbytes", "ObjectID": "objectid", "DevID": "devid"}

// fieldName turns a Go field name into its FORMAT.md name: DiskLogical
// disk_logical, RAMBytes ram_bytes, UUID uuid.
func fieldName(s string) string {
	if n, ok := fieldNames[s]; ok {
		return n
	}
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) && (unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// writeFields writes v: a struct as an object of its exported fields,
// slices and arrays of structs element by element, the rest as
// encoding/json does.
func writeFields(b *bytes.Buffer, v reflect.Value) error {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
		v = v.Elem()
	}
	if s, ok := byteString(v); ok {
		j, err := json.Marshal(s)
		b.Write(j)
		return err
	}
	switch {
	case v.Kind() == reflect.Struct && !isMarshaler(v.Type()):
		return writeStruct(b, v)
	case (v.Kind() == reflect.Slice || v.Kind() == reflect.Array) && structElems(v.Type()):
		if v.Kind() == reflect.Slice && v.IsNil() {
			b.WriteString("null")
			return nil
		}
		b.WriteByte('[')
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeFields(b, v.Index(i)); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	}
	j, err := json.Marshal(v.Interface())
	b.Write(j)
	return err
}

func writeStruct(b *bytes.Buffer, v reflect.Value) error {
	b.WriteByte('{')
	n := 0
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if !f.IsExported() || f.Tag.Get("json") == "-" {
			continue
		}
		if strings.HasSuffix(f.Tag.Get("json"), ",omitempty") && v.Field(i).IsZero() {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		name, _ := json.Marshal(fieldName(f.Name))
		b.Write(name)
		b.WriteByte(':')
		if err := writeFields(b, v.Field(i)); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// byteString is the JSON form of a byte array, byte slice or string.
func byteString(v reflect.Value) (any, bool) {
	isBytes := (v.Kind() == reflect.Array || v.Kind() == reflect.Slice) && v.Type().Elem().Kind() == reflect.Uint8
	if !isBytes && v.Kind() != reflect.String {
		return nil, false
	}
	var raw []byte
	if v.Kind() == reflect.String {
		raw = []byte(v.String())
	} else {
		raw = make([]byte, v.Len())
		reflect.Copy(reflect.ValueOf(raw), v)
	}
	switch {
	case v.Kind() == reflect.Array && v.Len() == 16:
		return uuid.UUID(raw).String(), true
	case v.Kind() == reflect.Array:
		return hex.EncodeToString(raw), true
	case utf8.Valid(raw):
		return string(raw), true
	}
	return map[string]string{"base64": base64.StdEncoding.EncodeToString(raw)}, true
}

var marshalers = []reflect.Type{reflect.TypeFor[json.Marshaler](), reflect.TypeFor[encoding.TextMarshaler]()}

// isMarshaler: t encodes itself; encoding/json is left to call it.
func isMarshaler(t reflect.Type) bool {
	for _, m := range marshalers {
		if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
			return true
		}
	}
	return false
}

// structElems: a slice or array of structs (or pointers to them).
func structElems(t reflect.Type) bool {
	e := t.Elem()
	if e.Kind() == reflect.Pointer {
		e = e.Elem()
	}
	return e.Kind() == reflect.Struct
}
