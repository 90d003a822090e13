package transfer

import (
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// outWriter makes the small files of a copy-out on a second goroutine:
// the walk, the image reads and the folders stay on the caller (fsys.FS
// is not safe for concurrent use), and the host calls that make a file
// (open, write, truncate, chown, chmod, xattrs, times, close: most of a
// tree's kernel time) run beside them. One writer runs its jobs in the
// order they were queued, so a file exists before a hard link to it, and
// a folder's own attributes are set after everything in it, as the
// sequential copy does. Jobs go over in batches (a cross-CPU wake-up per
// file costs more than the file; tar-out's pipe found the same), each
// batch with an arena for its files' bytes; outBatches of them bound the
// memory.
type outWriter struct {
	c    *outCopier
	work chan *outBatch
	free chan *outBatch
	done chan struct{}
	cur  *outBatch
	bad  refusal // the writer's: read by the caller once it is done
}

// Files up to outJobMax bytes go to the writer; a batch holds up to
// outArena bytes of them (a bigger file is copied by the caller once the
// writer is idle); outBatches batches exist.
const (
	outJobMax  = 256 << 10
	outArena   = 1 << 20
	outBatches = 4
	outJobs    = 256 // jobs a batch holds before it is sent
)

type outBatch struct {
	arena []byte
	jobs  []outJob
}

// outJob is one host change: a file (data set), a hard link (first
// set), or a folder's attributes (sub set, closed after).
type outJob struct {
	// seq is where the walk was when it queued the job (a folder's
	// attributes: after its last entry), so the first refusal is the one
	// a sequential copy meets first; on a tie the walk's own came first.
	seq    int
	d      *hostDir
	name   string
	src    string
	in     fsys.Inode
	data   []byte
	xattrs []format.Xattr
	first  *linkRef
	sub    *hostDir
}

func newOutWriter(c *outCopier) *outWriter {
	w := &outWriter{c: c, work: make(chan *outBatch, outBatches), free: make(chan *outBatch, outBatches), done: make(chan struct{})}
	for range outBatches {
		w.free <- &outBatch{arena: make([]byte, 0, outArena)}
	}
	go w.run()
	return w
}

// run is the writer goroutine.
func (w *outWriter) run() {
	defer close(w.done)
	for b := range w.work {
		for i := range b.jobs {
			j := &b.jobs[i]
			if err := w.do(j); err != nil {
				w.bad.add(j.seq, entryError(j.src, filepath.Join(j.d.path, j.name), err))
			}
			if j.sub != nil {
				j.sub.close()
			}
			*j = outJob{}
		}
		b.jobs, b.arena = b.jobs[:0], b.arena[:0]
		w.free <- b
	}
}

func (w *outWriter) do(j *outJob) error {
	switch {
	case j.first != nil:
		return unix.Linkat(int(j.first.dir.Fd()), j.first.name, j.d.dfd, j.name, 0)
	case j.sub != nil:
		return w.c.dirAttrs(&j.in, j.xattrs, j.d, j.name, j.sub)
	default:
		return w.c.makeFile(&j.in, j.data, j.xattrs, j.d, j.name)
	}
}

// batch returns the batch being filled, with room for n more bytes,
// sending the current one when it is full.
func (w *outWriter) batch(n int) *outBatch {
	if b := w.cur; b != nil && (len(b.jobs) >= outJobs || len(b.arena)+n > cap(b.arena)) {
		w.send()
	}
	if w.cur == nil {
		w.cur = <-w.free
	}
	return w.cur
}

func (w *outWriter) send() {
	if w.cur != nil {
		w.work <- w.cur
		w.cur = nil
	}
}

// file queues regular file in (of at most outJobMax bytes), reading its
// bytes now; a read error is returned and nothing is queued.
func (w *outWriter) file(seq int, in *fsys.Inode, src string, d *hostDir, name string) error {
	b := w.batch(int(in.Size))
	data := b.arena[len(b.arena) : len(b.arena)+int(in.Size)]
	if n, err := w.c.f.ReadAt(in, data, 0); n != len(data) {
		return readError(src, err)
	}
	var xs []format.Xattr
	if w.c.o.Archive {
		xs, _ = w.c.f.ListXattrs(in) // as setXattrs: none when they cannot be read
	}
	b.arena = b.arena[:len(b.arena)+len(data)]
	b.jobs = append(b.jobs, outJob{seq: seq, d: d, name: name, src: src, in: *in, data: data, xattrs: xs})
	if w.c.o.Progress != nil {
		w.c.o.Progress(int64(len(data)))
	}
	return nil
}

// link queues a hard link to the first copy of a file.
func (w *outWriter) link(seq int, first linkRef, src string, d *hostDir, name string) {
	b := w.batch(0)
	b.jobs = append(b.jobs, outJob{seq: seq, d: d, name: name, src: src, first: &first})
}

// dir queues the attributes of folder name in d, filled through sub,
// which the writer closes after.
func (w *outWriter) dir(seq int, in *fsys.Inode, xs []format.Xattr, src string, d *hostDir, name string, sub *hostDir) {
	b := w.batch(0)
	b.jobs = append(b.jobs, outJob{seq: seq, d: d, name: name, src: src, in: *in, xattrs: xs, sub: sub})
	if b == w.cur && len(b.jobs) >= outJobs {
		w.send()
	}
}

// close waits for everything queued and ends the writer; its first
// refusal, by walk order, joins the caller's.
func (w *outWriter) close() {
	w.send()
	close(w.work)
	<-w.done
	w.c.bad.add(w.bad.seq, w.bad.err)
}

// refusal keeps the first refusal of a walk by its place in the walk.
type refusal struct {
	seq int
	err error
}

func (r *refusal) add(seq int, err error) {
	if err != nil && (r.err == nil || seq < r.seq) {
		r.seq, r.err = seq, err
	}
}
