// Package nbdkittest runs nbdkit servers for tests of NBD devices, on
// 127.0.0.1 or on a unix socket in a temporary folder.
package nbdkittest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Server is one nbdkit process serving one plugin.
type Server struct {
	// URL is the device spec of the export (named "e"; nbdkit serves any name).
	URL  string
	args []string // listen options, then the plugin and its parameters
	pid  string
	sock string // "" on TCP
	cmd  *exec.Cmd
}

// Need skips the test when nbdkit is not installed (CI installs it).
func Need(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("nbdkit"); err != nil {
		t.Skip("nbdkit is not installed (apt-get install nbdkit)")
	}
}

// Start serves plugin args (e.g. "memory", "size=64M") on a random free
// port of 127.0.0.1, or on a socket in a temporary folder when unix. The
// server is killed when the test ends.
func Start(t testing.TB, unix bool, plugin ...string) *Server {
	t.Helper()
	Need(t)
	dir := t.TempDir()
	s := &Server{pid: filepath.Join(dir, "pid")}
	if unix {
		s.sock = filepath.Join(dir, "sock")
		s.args = []string{"-U", s.sock}
		s.URL = "nbd+unix:///e?socket=" + s.sock
	} else {
		port := freePort(t)
		s.args = []string{"-i", "127.0.0.1", "-p", strconv.Itoa(port)}
		s.URL = fmt.Sprintf("nbd://127.0.0.1:%d/e", port)
	}
	s.args = append(s.args, plugin...)
	s.start(t)
	t.Cleanup(s.Kill)
	return s
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (s *Server) start(t testing.TB) {
	t.Helper()
	os.Remove(s.pid)
	if s.sock != "" {
		os.Remove(s.sock) // left behind by a killed server
	}
	args := append([]string{"-f", "--exit-with-parent", "--pidfile", s.pid}, s.args...)
	s.cmd = exec.Command("nbdkit", args...)
	s.cmd.Stderr = os.Stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start nbdkit: %v", err)
	}
	// nbdkit writes the pid file once it accepts connections.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(s.pid); err == nil && len(b) > 0 {
			return
		}
	}
	s.Kill()
	t.Fatalf("nbdkit %v: not ready after 10 s", args)
}

// Kill stops the server at once (SIGKILL), as a crash or power cut would.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the server again on the same address with the same plugin.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	s.start(t)
}
