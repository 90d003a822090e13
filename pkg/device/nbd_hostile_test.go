package device

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A scripted NBD server speaking to our client over a unix socket: every
// byte it sends is chosen by the test, so the client's checks of hostile
// replies can be exercised one by one.

type fakeReq struct {
	cmd    uint16
	handle uint64
	off    uint64
	length uint32
}

type fakeServer struct {
	hello func(c net.Conn) // the handshake; nil: fixed newstyle, structured, GO
	serve func(c net.Conn, r fakeReq)
}

func be16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func optRep(opt, typ uint32, data []byte) []byte {
	return cat(be64(nbdRepMagic), be32(opt), be32(typ), be32(uint32(len(data))), data)
}

// readOpt reads one option from the client.
func readOpt(c net.Conn) (uint32, []byte) {
	h := make([]byte, 16)
	if _, err := io.ReadFull(c, h); err != nil {
		return 0, nil
	}
	d := make([]byte, binary.BigEndian.Uint32(h[12:]))
	io.ReadFull(c, d)
	return binary.BigEndian.Uint32(h[8:]), d
}

const fakeSize = 1 << 20

func goodHello(structured bool) func(c net.Conn) {
	return func(c net.Conn) {
		c.Write(cat(be64(nbdMagic), be64(nbdOptMagic), be16(nbdFlagFixedNewstyle|nbdFlagNoZeroes)))
		io.ReadFull(c, make([]byte, 4))
		for {
			opt, _ := readOpt(c)
			switch opt {
			case nbdOptStructuredReply:
				if structured {
					c.Write(optRep(opt, nbdRepAck, nil))
				} else {
					c.Write(optRep(opt, nbdRepUnsup, nil))
				}
			case nbdOptGo:
				c.Write(optRep(opt, nbdRepInfo, cat(be16(nbdInfoExport), be64(fakeSize), be16(nbdFlagHasFlags|nbdFlagSendFlush))))
				c.Write(optRep(opt, nbdRepAck, nil))
				return
			default:
				return
			}
		}
	}
}

func (f fakeServer) start(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		hello := f.hello
		if hello == nil {
			hello = goodHello(true)
		}
		hello(c)
		for {
			h := make([]byte, 28)
			if _, err := io.ReadFull(c, h); err != nil {
				return
			}
			r := fakeReq{cmd: binary.BigEndian.Uint16(h[6:]), handle: binary.BigEndian.Uint64(h[8:]),
				off: binary.BigEndian.Uint64(h[16:]), length: binary.BigEndian.Uint32(h[24:])}
			if r.cmd == nbdCmdWrite {
				io.ReadFull(c, make([]byte, r.length))
			}
			if r.cmd == nbdCmdDisc {
				return
			}
			if f.serve != nil {
				f.serve(c, r)
			}
		}
	}()
	return "nbd+unix:///x?socket=" + sock
}

func chunk(flags, typ uint16, handle uint64, payload []byte) []byte {
	return cat(be32(nbdStructMagic), be16(flags), be16(typ), be64(handle), be32(uint32(len(payload))), payload)
}

func data(off uint64, n int) []byte { return cat(be64(off), bytes.Repeat([]byte{7}, n)) }

// TestNBDHostileReplies: each broken reply to a 4 KiB read fails the
// read with ErrProtocol (or the timeout) within a bounded time, never
// hangs, and never reports success.
func TestNBDHostileReplies(t *testing.T) {
	t.Setenv(NBDTimeoutEnv, "1s")
	done := uint16(nbdReplyFlagDone)
	cases := map[string]func(c net.Conn, r fakeReq){
		"unknown handle": func(c net.Conn, r fakeReq) { c.Write(cat(be32(nbdSimpleMagic), be32(0), be64(r.handle+1))) },
		"bad magic":      func(c net.Conn, r fakeReq) { c.Write(cat(be32(0xdeadbeef), be32(0), be64(r.handle))) },
		"simple data under structured": func(c net.Conn, r fakeReq) {
			c.Write(cat(be32(nbdSimpleMagic), be32(0), be64(r.handle), make([]byte, r.length)))
		},
		"chunk outside": func(c net.Conn, r fakeReq) {
			c.Write(chunk(done, nbdReplyOffsetData, r.handle, data(r.off+8192, 4096)))
		},
		"chunk too long": func(c net.Conn, r fakeReq) {
			c.Write(cat(be32(nbdStructMagic), be16(done), be16(nbdReplyOffsetData), be64(r.handle), be32(0xffffffff)))
		},
		"overlap": func(c net.Conn, r fakeReq) {
			c.Write(chunk(0, nbdReplyOffsetData, r.handle, data(r.off, 2048)))
			c.Write(chunk(done, nbdReplyOffsetData, r.handle, data(r.off+1024, 3072)))
		},
		"short cover": func(c net.Conn, r fakeReq) { c.Write(chunk(done, nbdReplyOffsetData, r.handle, data(r.off, 2048))) },
		"empty hole": func(c net.Conn, r fakeReq) {
			c.Write(chunk(done, nbdReplyOffsetHole, r.handle, cat(be64(r.off), be32(0))))
		},
		"unknown chunk type": func(c net.Conn, r fakeReq) {
			c.Write(chunk(done, 77, r.handle, nil))
		},
		"huge error chunk": func(c net.Conn, r fakeReq) {
			c.Write(cat(be32(nbdStructMagic), be16(done), be16(nbdReplyError), be64(r.handle), be32(1<<30)))
		},
		"error without errno": func(c net.Conn, r fakeReq) {
			c.Write(chunk(done, nbdReplyError, r.handle, cat(be32(0), be16(0))))
		},
		"silent": nil,
		"dies mid-reply": func(c net.Conn, r fakeReq) {
			c.Write(chunk(done, nbdReplyOffsetData, r.handle, data(r.off, 100))[:40])
			c.Close()
		},
	}
	for name, serve := range cases {
		t.Run(name, func(t *testing.T) {
			spec := fakeServer{serve: serve}.start(t)
			d, err := Open(spec, OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			start := time.Now()
			buf := make([]byte, 4096)
			_, err = d.ReadAt(buf, 4096)
			if err == nil {
				t.Fatalf("read succeeded: %v", buf[:8])
			}
			if time.Since(start) > 3*time.Second {
				t.Fatalf("took %v", time.Since(start))
			}
			if name != "silent" && name != "dies mid-reply" && !errors.Is(err, ErrProtocol) {
				t.Fatalf("want ErrProtocol: %v", err)
			}
			if !strings.Contains(err.Error(), spec) {
				t.Fatalf("error does not name the device: %v", err)
			}
			if name == "overlap" && !strings.Contains(err.Error(), "overlaps") {
				t.Fatalf("overlap not named: %v", err)
			}
			if _, err := d.ReadAt(buf, 0); err == nil {
				t.Fatal("the connection was not dropped after a violation")
			}
		})
	}
}

// TestNBDGoodReplies: replies the protocol allows are accepted: chunks
// out of order with a hole, a server error with its message (the
// connection survives it), and simple replies when the server declines
// structured ones.
func TestNBDGoodReplies(t *testing.T) {
	done := uint16(nbdReplyFlagDone)
	spec := fakeServer{serve: func(c net.Conn, r fakeReq) {
		if r.off == 0 {
			c.Write(chunk(done, nbdReplyError, r.handle, cat(be32(5), be16(4), []byte("bad\n"))))
			return
		}
		c.Write(chunk(0, nbdReplyOffsetData, r.handle, data(r.off+1024, 3072)))
		c.Write(chunk(0, nbdReplyOffsetHole, r.handle, cat(be64(r.off), be32(1024))))
		c.Write(chunk(done, nbdReplyNone, r.handle, nil))
	}}.start(t)
	d, err := Open(spec, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	buf := bytes.Repeat([]byte{1}, 4096)
	if _, err := d.ReadAt(buf, 0); !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "server: bad?") {
		t.Fatalf("error reply: %v", err)
	}
	if _, err := d.ReadAt(buf, 4096); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf[:1024], make([]byte, 1024)) || !bytes.Equal(buf[1024:], bytes.Repeat([]byte{7}, 3072)) {
		t.Fatal("hole and data not placed")
	}

	simple := fakeServer{hello: goodHello(false), serve: func(c net.Conn, r fakeReq) {
		c.Write(cat(be32(nbdSimpleMagic), be32(0), be64(r.handle), bytes.Repeat([]byte{9}, int(r.length))))
	}}.start(t)
	d2, err := Open(simple, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if _, err := d2.ReadAt(buf, 0); err != nil || buf[0] != 9 || buf[4095] != 9 {
		t.Fatalf("simple reply: %v %d", err, buf[0])
	}
}

// TestNBDHostileHandshake: broken negotiations fail the open with a
// clear error; a server without NBD_OPT_GO is reached by EXPORT_NAME.
func TestNBDHostileHandshake(t *testing.T) {
	t.Setenv(NBDTimeoutEnv, "1s")
	greet := cat(be64(nbdMagic), be64(nbdOptMagic), be16(nbdFlagFixedNewstyle))
	cases := map[string]func(c net.Conn){
		"not nbd":  func(c net.Conn) { c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n")) },
		"oldstyle": func(c net.Conn) { c.Write(cat(be64(nbdMagic), be64(nbdOldstyleMagic), make([]byte, 140))) },
		"huge option reply": func(c net.Conn) {
			c.Write(greet)
			io.ReadFull(c, make([]byte, 4))
			readOpt(c)
			c.Write(cat(be64(nbdRepMagic), be32(nbdOptStructuredReply), be32(nbdRepAck), be32(1<<31)))
		},
		"no export info": func(c net.Conn) {
			c.Write(greet)
			io.ReadFull(c, make([]byte, 4))
			opt, _ := readOpt(c)
			c.Write(optRep(opt, nbdRepAck, nil))
			opt, _ = readOpt(c)
			c.Write(optRep(opt, nbdRepAck, nil))
		},
		"refuses export": func(c net.Conn) {
			c.Write(greet)
			io.ReadFull(c, make([]byte, 4))
			opt, _ := readOpt(c)
			c.Write(optRep(opt, nbdRepAck, nil))
			opt, _ = readOpt(c)
			c.Write(optRep(opt, nbdRepErrBit|6, []byte("no such export")))
		},
		"silent": func(c net.Conn) { time.Sleep(3 * time.Second) },
	}
	for name, hello := range cases {
		t.Run(name, func(t *testing.T) {
			spec := fakeServer{hello: hello}.start(t)
			start := time.Now()
			d, err := Open(spec, OpenOptions{})
			if err == nil {
				d.Close()
				t.Fatal("open succeeded")
			}
			if time.Since(start) > 2500*time.Millisecond || !strings.Contains(err.Error(), spec) {
				t.Fatalf("%v after %v", err, time.Since(start))
			}
			if name == "refuses export" && !strings.Contains(err.Error(), "no such export") {
				t.Fatalf("server's reason lost: %v", err)
			}
		})
	}
	old := fakeServer{hello: func(c net.Conn) {
		c.Write(cat(be64(nbdMagic), be64(nbdOptMagic), be16(nbdFlagFixedNewstyle)))
		io.ReadFull(c, make([]byte, 4))
		for {
			opt, _ := readOpt(c)
			if opt == nbdOptExportName {
				c.Write(cat(be64(fakeSize), be16(nbdFlagHasFlags|nbdFlagReadOnly), make([]byte, 124)))
				return
			}
			c.Write(optRep(opt, nbdRepUnsup, nil))
		}
	}}.start(t)
	d, err := Open(old, OpenOptions{})
	if err != nil || d.Size() != fakeSize {
		t.Fatalf("EXPORT_NAME fallback: %v", err)
	}
	d.Close()
}

// TestSplitRemote: IMAGE:PATH splits after the URL's authority.
func TestSplitRemote(t *testing.T) {
	for arg, want := range map[string][3]string{
		"nbd://h:10809/e:/a/b":             {"nbd://h:10809/e", "/a/b", "true"},
		"nbd://[::1]:5/e":                  {"nbd://[::1]:5/e", "", "false"},
		"nbd://h/e:":                       {"nbd://h/e", "", "true"},
		"nbd+unix:///e?socket=/t/s:/x":     {"nbd+unix:///e?socket=/t/s", "/x", "true"},
		"nbd+unix:///e?socket=/t/a%3Ab:/x": {"nbd+unix:///e?socket=/t/a%3Ab", "/x", "true"},
	} {
		spec, p, has, ok := SplitRemote(arg)
		if !ok || spec != want[0] || p != want[1] || (has != (want[2] == "true")) {
			t.Errorf("%s: %q %q %v %v", arg, spec, p, has, ok)
		}
	}
	if _, _, _, ok := SplitRemote("disk.img:/x"); ok {
		t.Error("a file operand split as a URL")
	}
	for _, bad := range []string{"nbd:///e", "nbd+unix:///e", "nbd://h/e?tls=on", "nbds://h/e", "nbd://u@h/e", "nbd+unix://h/e?socket=/s"} {
		if _, err := parseNBD(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if tg, err := parseNBD("nbd://h/ex%20p"); err != nil || tg.addr != "h:10809" || tg.export != "ex p" {
		t.Errorf("default port / decoding: %+v %v", tg, err)
	}
}
