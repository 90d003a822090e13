package device

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Network device specs follow the NBD URI form (as qemu and libnbd read
// it): nbd://HOST[:PORT]/EXPORT and nbd+unix:///EXPORT?socket=PATH. The
// TLS schemes are recognised only to be refused by name.
var remoteSchemes = []string{"nbd://", "nbd+unix://", "nbds://", "nbds+unix://"}

// nbdDefaultPort is the IANA port of NBD.
const nbdDefaultPort = "10809"

// nbdMaxName bounds an export name (the protocol's limit, in bytes).
const nbdMaxName = 4096

// IsRemote reports whether spec names a network device: it has no file,
// no folder to find the other devices of a set in, and no lock on this
// host, so callers must not stat, create, truncate or scan around it.
func IsRemote(spec string) bool {
	for _, s := range remoteSchemes {
		if strings.HasPrefix(spec, s) {
			return true
		}
	}
	return false
}

// SplitRemote splits "URL:PATH" (an image path inside a network device)
// at the first colon after the URL's authority, so a port or an IPv6
// address stays in the URL. ok is false when arg is no network spec;
// hasPath is false when nothing follows the URL. A colon inside an export
// name or socket path is written %3A.
func SplitRemote(arg string) (spec, path string, hasPath, ok bool) {
	if !IsRemote(arg) {
		return "", "", false, false
	}
	rest := arg[strings.Index(arg, "://")+3:]
	start := len(arg) - len(rest)
	auth := len(rest)
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		auth = i
	}
	i := strings.IndexByte(rest[auth:], ':')
	if i < 0 {
		return arg, "", false, true
	}
	cut := start + auth + i
	return arg[:cut], arg[cut+1:], true, true
}

// nbdTarget is where a network spec points.
type nbdTarget struct {
	network, addr string // for net.Dial
	export        string
}

// parseNBD reads a network spec. Anything it does not understand is
// refused rather than ignored, so a typo cannot connect somewhere else.
func parseNBD(spec string) (nbdTarget, error) {
	bad := func(format string, a ...any) (nbdTarget, error) {
		return nbdTarget{}, fmt.Errorf("open %s: %s", spec, fmt.Sprintf(format, a...))
	}
	u, err := url.Parse(spec)
	if err != nil {
		return bad("not an NBD URL: %v", err)
	}
	if u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return bad("user info, fragments and opaque URLs are not supported")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return bad("bad query: %v", err)
	}
	var t nbdTarget
	switch u.Scheme {
	case "nbd":
		if u.Hostname() == "" {
			return bad("no host (want nbd://HOST[:PORT]/EXPORT)")
		}
		port := u.Port()
		if port == "" {
			port = nbdDefaultPort
		}
		t.network, t.addr = "tcp", net.JoinHostPort(u.Hostname(), port)
	case "nbd+unix":
		if u.Host != "" {
			return bad("nbd+unix takes no host (want nbd+unix:///EXPORT?socket=PATH)")
		}
		t.network, t.addr = "unix", q.Get("socket")
		if t.addr == "" {
			return bad("no socket (want nbd+unix:///EXPORT?socket=PATH)")
		}
		delete(q, "socket")
	case "nbds", "nbds+unix":
		return bad("NBD over TLS is not supported")
	default:
		return bad("unknown scheme %q", u.Scheme)
	}
	for k := range q {
		return bad("unknown parameter %q", k)
	}
	t.export = strings.TrimPrefix(u.Path, "/")
	if len(t.export) > nbdMaxName {
		return bad("export name is %d bytes, at most %d", len(t.export), nbdMaxName)
	}
	return t, nil
}
