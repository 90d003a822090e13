package device

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// FaultEnv names the environment variable that injects faults into
// devices opened by the tools, for end-to-end fault tests:
//
//	DDFS_FAULT=KIND:AFTER[:NAME]
//
// KIND is write-eio, write-enospc, short-write, flush or read-eio; the
// fault hits every operation of that kind after the first AFTER; NAME
// limits it to devices with that base name. Unset in normal use.
const FaultEnv = "DDFS_FAULT"

func faultFromEnv(spec string, dev Device) (Device, error) {
	v := os.Getenv(FaultEnv)
	if v == "" {
		return dev, nil
	}
	parts := strings.Split(v, ":")
	if len(parts) < 2 {
		return nil, fmt.Errorf("%s=%q: want KIND:AFTER[:NAME]", FaultEnv, v)
	}
	if len(parts) > 2 && parts[2] != filepath.Base(spec) {
		return dev, nil
	}
	after, err := strconv.Atoi(parts[1])
	if err != nil {
		return nil, fmt.Errorf("%s=%q: bad count", FaultEnv, v)
	}
	var rule Rule
	switch parts[0] {
	case "write-eio":
		rule = FailAfter(after, OpWrite, syscall.EIO)
	case "write-enospc":
		rule = FailAfter(after, OpWrite, syscall.ENOSPC)
	case "short-write":
		rule = ShortWrite(after)
	case "flush":
		rule = FailAfter(after, OpFlush, syscall.EIO)
	case "read-eio":
		rule = FailAfter(after, OpRead, syscall.EIO)
	default:
		return nil, fmt.Errorf("%s=%q: unknown fault kind", FaultEnv, v)
	}
	return NewFaulty(dev, rule), nil
}
