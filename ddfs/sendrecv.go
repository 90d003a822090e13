package main

// ddfs send and ddfs receive (issue 39): a snapshot as a stream
// (FORMAT.md §10) and a stream into an image as a snapshot (§6.13), as
// btrfs send/receive and zfs send/receive do, on image files.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ddfs/ddfs/pkg/send"
	"github.com/ddfs/ddfs/pkg/units"
)

const sendExamples = `  ddfs snapshot create disk.img nightly
  ddfs send disk.img@nightly -o nightly.stream
  ddfs send disk.img@nightly | ddfs receive backup.img
  ddfs snapshot create disk.img nightly2
  ddfs send --parent disk.img@nightly disk.img@nightly2 | ddfs receive backup.img
  ddfs send disk.img@nightly | ssh host ddfs receive /srv/backup.img
  ddfs send --compressed-data disk.img@nightly -o nightly.stream`

func newSendCmd() *cobra.Command {
	c, fl, of := newCmd("send [--parent IMAGE@BASE] [--compressed-data] IMAGE@SNAPSHOT [-o FILE]\n\nWrites snapshot SNAPSHOT as a send stream (FORMAT.md §10: checksummed records and a\ntrailer that proves the stream complete) to stdout or FILE; ddfs receive makes it a\nsnapshot of another image. Holes stay holes; hard links, xattrs, modes, owners,\ndevice nodes and times travel (ctime is the receiver's). With --parent the stream\nholds only what changed since BASE, an older snapshot of the same image: it applies\non top of the snapshot the receiver got from BASE (or BASE itself). With\n--compressed-data, data the image keeps compressed travels as stored (smaller,\nno decompression); the receiver checks each piece decompresses whole before it\nwrites it.",
		"write a snapshot as a send stream", sendExamples)
	out := fl.StringP("output", "o", "", "write the stream to FILE instead of stdout")
	parent := fl.StringP("parent", "p", "", "send only the changes since `IMAGE@BASE`, an older snapshot of the same image")
	compressed := fl.Bool("compressed-data", false, "send data in compressed extents as stored, not decompressed (the receiver checks it decompresses whole)")
	c.RunE = func(c *cobra.Command, args []string) error {
		if fl.NArg() != 1 || !strings.Contains(fl.Arg(0), "@") {
			return usageErr("want IMAGE@SNAPSHOT")
		}
		img, snap := splitSnapshot(fl.Arg(0))
		if snap == "" {
			return usageErr("want IMAGE@SNAPSHOT")
		}
		var w io.Writer = c.OutOrStdout()
		if *out != "" {
			f, err := os.Create(*out)
			if err != nil {
				return err
			}
			defer f.Close()
			w = f
		} else if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			return usageErr("refusing to write a send stream to a terminal (redirect stdout or use -o)")
		} else if ok {
			widenPipe(f) // 1 MiB writes into a 64 KiB pipe took turns with the reader 16 times each
		}
		im, err := of.openImage(fl.Arg(0), false)
		if err != nil {
			return err
		}
		defer im.close()
		s, err := im.live.Store().FindSnapshot(snap)
		if err != nil {
			return fmt.Errorf("%s: %w", fl.Arg(0), err)
		}
		sn := send.Snapshot{Name: s.Name, UUID: s.UUID, Ctime: s.Ctime}
		so := send.SendOptions{CompressedData: *compressed}
		if *parent != "" {
			pimg, pname := splitSnapshot(*parent)
			if pname == "" || pimg != img {
				return usageErr("--parent wants IMAGE@BASE, a snapshot of the image SNAPSHOT is of")
			}
			ps, err := im.live.Store().FindSnapshot(pname)
			if err != nil {
				return fmt.Errorf("%s: %w", *parent, err)
			}
			base, err := im.live.OpenSnapshot(pname)
			if err != nil {
				return fmt.Errorf("%s: %w", *parent, err)
			}
			defer base.Close()
			if _, err := send.SendIncremental(base, im.f, w, sn, ps.UUID, so); err != nil {
				return im.err(fmt.Errorf("%s: %w", img+"@"+snap, err))
			}
			return nil
		}
		if _, err := send.Send(im.f, w, sn, so); err != nil {
			return im.err(fmt.Errorf("%s: %w", img+"@"+snap, err))
		}
		return nil
	}
	return c
}

func newReceiveCmd() *cobra.Command {
	c, fl, of := newCmd("receive IMAGE [-i FILE]\n\nReads a send stream from stdin or FILE and makes the snapshot it carries in IMAGE,\nwith the sent snapshot's UUID as its received UUID. The stream is built beside the\nlive namespace, which readers keep seeing and which stays as it is; the snapshot\nappears in one commit once the stream's trailer proved it whole. A damaged, cut\nor hostile stream, or a power cut, leaves IMAGE as it was (the next writer undoes a\nreceive a crash cut short). With -s (as zfs receive -s) a receive that fails keeps\nwhat it committed, invisible; --resume then reads the same stream again, checks and\nskips what was applied, and goes on.",
		"make a snapshot from a send stream", sendExamples)
	in := fl.StringP("input", "i", "", "read the stream from FILE instead of stdin")
	quiet := fl.BoolP("quiet", "q", false, "print nothing on success")
	resumable := fl.BoolP("resumable", "s", false, "keep a receive that fails, to be resumed")
	resume := fl.Bool("resume", false, "go on with the receive IMAGE has in progress (give the same stream)")
	c.RunE = func(c *cobra.Command, args []string) error {
		if fl.NArg() != 1 {
			return usageErr("want IMAGE")
		}
		var r io.Reader = c.InOrStdin()
		if f, ok := r.(*os.File); ok && *in == "" {
			widenPipe(f) // the stream comes in 1 MiB writes; a 64 KiB pipe splits each in 16
		}
		if *in != "" {
			f, err := os.Open(*in)
			if err != nil {
				return err
			}
			defer f.Close()
			r = f
		}
		of.receiving = *resume
		im, err := of.openImage(fl.Arg(0), true)
		if err != nil {
			return err
		}
		name, _, st, err := send.ReceiveWith(im.f, r, send.Options{Resumable: *resumable || *resume, Resume: *resume})
		if err != nil {
			if cerr := im.close(); cerr != nil && !errors.Is(err, send.ErrStream) {
				err = fmt.Errorf("%w; %v", err, cerr)
			}
			return fmt.Errorf("%s: %w", fl.Arg(0), err)
		}
		if err := im.close(); err != nil {
			return err
		}
		if !*quiet {
			fmt.Fprintf(c.OutOrStdout(), "received snapshot %s: %d files, %s of data, %s stream\n", shellQuote(name), st.Files, units.Human(st.Data), units.Human(st.Bytes))
		}
		return nil
	}
	return c
}
