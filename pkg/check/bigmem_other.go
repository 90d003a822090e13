//go:build !linux

package check

import "errors"

const bigChunk = 2 << 20

// remapBig fails: big memory is the Go heap here.
func remapBig(old []byte, n int) ([]byte, error) { return nil, errors.New("no big memory") }

func freeBig(mem []byte) {}
