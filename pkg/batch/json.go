package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
)

// JSONLine writes v, an object, as one line with "path" and "exit" first
// (a batch run's report of one set).
func JSONLine(w io.Writer, path string, code int, v any) error {
	head, err := json.Marshal(struct {
		Path string `json:"path"`
		Exit int    `json:"exit"`
	}{path, code})
	if err != nil {
		return err
	}
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var line bytes.Buffer
	line.Write(head[:len(head)-1])
	if body = bytes.TrimSpace(body); len(body) > 2 { // not {}
		line.WriteByte(',')
		line.Write(body[1:])
	} else {
		line.WriteByte('}')
	}
	line.WriteByte('\n')
	_, err = w.Write(line.Bytes())
	return err
}

// ErrorLine is the JSON Lines report of a set that could not be
// processed (ctx: the job's, for Reason).
func ErrorLine(ctx context.Context, w io.Writer, path string, code int, err error) error {
	return JSONLine(w, path, code, struct {
		Error string `json:"error"`
	}{Reason(ctx, path, err)})
}
