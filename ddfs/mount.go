package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log"
	"log/syslog"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/fusefs"
)

// mountChildEnv marks the background copy of a mount (see daemonize).
const mountChildEnv = "DDFS_MOUNT_CHILD"

func newMountCmd() *cobra.Command {
	c, fl, of := newCmd("mount [-o OPTIONS] IMAGE MOUNTPOINT\n\n"+
		"Serves the image over FUSE (needs /dev/fuse and fusermount3, Debian package fuse3) until\n"+
		"'fusermount3 -u MOUNTPOINT' (or Ctrl-C with --foreground), which commits and ends it.\n"+
		"fsync commits at once; other changes commit every commit=SECONDS (default 5) and at unmount.\n"+
		"OPTIONS (comma-separated): ro, rw, allow_other, commit=SECONDS, readahead=KIB, debug.\n"+
		"readahead (default 4096 KiB) is set only when run as root (sysfs); else the kernel's 128 KiB.",
		"serve an image as a mounted filesystem (FUSE)",
		"  ddfs mount disk.img out && ls -l out; fusermount3 -u out\n"+
			"  ddfs mount -o ro,allow_other disk.img out && grep -r readme out; fusermount3 -u out\n")
	opts := fl.StringP("options", "o", "", "mount options: ro, rw, allow_other, commit=SECONDS, readahead=KIB, debug")
	fg := fl.BoolP("foreground", "f", false, "stay in the foreground (log on stderr; Ctrl-C unmounts)")
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) != 2 {
			return usageErr("want IMAGE MOUNTPOINT")
		}
		mo, err := parseMountOptions(*opts)
		if err != nil {
			return err
		}
		if st, err := os.Stat(args[1]); err != nil || !st.IsDir() {
			return usageErr("%s: mount point must be an existing directory", args[1])
		}
		if !*fg && os.Getenv(mountChildEnv) == "" {
			return daemonize()
		}
		return serve(of, args[0], args[1], mo)
	}
	return c
}

func parseMountOptions(s string) (fusefs.Options, error) {
	var o fusefs.Options
	for _, opt := range strings.Split(s, ",") {
		k, v, hasV := strings.Cut(opt, "=")
		switch {
		case opt == "" || opt == "rw" || opt == "default_permissions":
		case opt == "ro":
			o.ReadOnly = true
		case opt == "allow_other":
			o.AllowOther = true
		case opt == "debug":
			o.Debug = true
		case k == "readahead" && hasV:
			n, err := strconv.ParseUint(v, 10, 20)
			if err != nil || n == 0 {
				return o, usageErr("readahead=%s: want KiB, 1 or more", v)
			}
			o.ReadAheadKB = int(n)
		case k == "commit" && hasV:
			n, err := strconv.ParseUint(v, 10, 31)
			if err != nil {
				return o, usageErr("commit=%s: want whole seconds", v)
			}
			o.Commit = time.Duration(n) * time.Second
		default:
			return o, usageErr("unknown mount option %q (want ro, rw, allow_other, commit=SECONDS, readahead=KIB, debug)", opt)
		}
	}
	return o, nil
}

// serve mounts and serves until unmounted; the image is committed and
// closed at the end. A background child reports on fd 3 once mounted.
func serve(of *openFlags, img, dir string, mo fusefs.Options) error {
	im, err := of.openImage(img, !mo.ReadOnly)
	if err != nil {
		return err
	}
	mo.Name = img
	mo.Log = log.New(os.Stderr, "ddfs: mount: "+img+": ", 0)
	// Caught from before the mount appears: a Ctrl-C as soon as it is
	// there unmounts and commits (it used to kill the server, leaving a
	// dead mount, until the handler came a moment later).
	sigs := make(chan os.Signal, 1)
	cli.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	s, err := fusefs.Mount(dir, im.f, mo)
	if err != nil {
		signal.Stop(sigs)
		im.close()
		return fmt.Errorf("%s: %w", img, err)
	}
	go func() {
		for range sigs {
			// Busy (a process inside): say so and keep serving.
			if err := s.Unmount(); err != nil {
				mo.Log.Printf("unmount %s: %v", dir, err)
			}
		}
	}()
	if os.Getenv(mountChildEnv) != "" {
		detach(mo.Log)
	}
	stopProfile := cpuProfile(mo.Log)
	err = s.Wait()
	stopProfile()
	signal.Stop(sigs)
	if cerr := im.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", img, err)
	}
	return nil
}

// cpuProfile profiles the server into $DDFS_MOUNT_CPUPROFILE, if set,
// until the returned stop (bench/fuse.sh PROFILE=FILE).
func cpuProfile(l *log.Logger) (stop func()) {
	name := os.Getenv("DDFS_MOUNT_CPUPROFILE")
	if name == "" {
		return func() {}
	}
	f, err := os.Create(name)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		l.Printf("cpu profile: %v", err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// detach ends a background child's link to its parent: stderr goes to
// /dev/null (a pipe held open would keep the caller's shell waiting),
// "ok" on fd 3 lets the parent exit 0, and logs go to syslog if any.
func detach(l *log.Logger) {
	signal.Ignore(syscall.SIGPIPE)
	if null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
		syscall.Dup2(int(null.Fd()), 2)
		null.Close()
	}
	status := os.NewFile(3, "status")
	fmt.Fprintln(status, "ok")
	status.Close()
	if w, err := syslog.New(syslog.LOG_ERR|syslog.LOG_DAEMON, "ddfs"); err == nil {
		l.SetOutput(w)
	} else {
		l.SetOutput(io.Discard)
	}
}

// daemonize runs this mount again in the background (Go cannot fork)
// and returns once it is mounted, with its errors if it failed.
func daemonize() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	sr, sw, err := os.Pipe()
	if err != nil {
		return err
	}
	er, ew, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Env = append(os.Environ(), mountChildEnv+"=1")
	cmd.Stderr = ew
	cmd.ExtraFiles = []*os.File{sw}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	sw.Close()
	ew.Close()
	copied := make(chan struct{})
	go func() { io.Copy(os.Stderr, er); close(copied) }()
	line, _ := bufio.NewReader(sr).ReadString('\n')
	<-copied
	if line == "ok\n" {
		return nil
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return &cli.CodeError{Code: ee.ExitCode()} // it said why on stderr
	}
	return fmt.Errorf("background mount ended: %v", err)
}
