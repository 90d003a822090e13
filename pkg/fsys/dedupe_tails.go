package fsys

import (
	"bytes"
	"sync"
	"sync/atomic"

	"github.com/ddfs/ddfs/format"
)

// Strong tails (FORMAT.md §6.8). An xxh3 match must be proven before it
// is shared: by a read of the extent, or, when the entry carries the
// first 20 bytes of its block's BLAKE3, by the new block's BLAKE3 alone.
// Hashing every new block with BLAKE3 as it is written costs what xxh3
// saves, so the tails are made while a commit waits for the devices to
// take its data: a slow device (where reading a backup's duplicates back
// would cost most) leaves time for all of them, a fast one for few (and
// reads back from it are cheap). The tail is hashed from the extent read
// back raw and checked against the sector sums the write computed, so it
// describes the bytes that were written.

// untailed is an xxh3 entry made in the running transaction.
type untailed struct {
	key    format.Key
	hash   [format.CsumSize]byte
	length uint64
	sums   []byte // the block's sector sums, as written
}

// maxUntailed bounds the entries a transaction remembers (8 GiB of
// 128 KiB blocks); the rest stay without a tail.
const maxUntailed = 1 << 16

// noteUntailed remembers a new entry for tailWhileFlushing: xxh3 entries
// of whole-sector, uncompressed blocks whose sums the write computed.
func (f *FS) noteUntailed(k format.Key, b block, pol dataPolicy) {
	if !f.opt.StrongTails || pol.hash != format.CsumXXH3 || b.sums == nil || len(f.untailed) >= maxUntailed {
		return
	}
	f.untailed = append(f.untailed, untailed{key: k, hash: b.hash, length: uint64(len(b.data)), sums: b.sums})
}

type tailed struct {
	u      *untailed
	strong [format.DedupeHashLen]byte
}

// tailWhileFlushing flushes the devices (the data the commit will
// reference is written) and, until the flush returns, gives the
// transaction's new xxh3 entries their tails, hashed on every core.
func (f *FS) tailWhileFlushing() error {
	list := f.untailed
	f.untailed = nil
	if len(list) == 0 || f.tx == nil {
		return nil
	}
	sb := f.st.Super()
	ss, csum := uint64(sb.SectorSize), sb.CsumType
	flushed := make(chan error, 1)
	go func() { flushed <- f.st.Vol.Flush() }()
	var stop atomic.Bool
	work := make(chan *untailed)
	results := make(chan tailed, cpus())
	var wg sync.WaitGroup
	for range cpus() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range work {
				if t, ok := f.tailOf(u, ss, csum); ok {
					results <- t
				}
			}
		}()
	}
	go func() {
		for i := range list {
			if stop.Load() {
				break
			}
			work <- &list[i]
		}
		close(work)
		wg.Wait()
		close(results)
	}()
	var ferr, terr error
	done := false
	for !done || results != nil {
		select {
		case ferr = <-flushed:
			done, flushed = true, nil
			stop.Store(true)
		case t, ok := <-results:
			if !ok {
				results = nil
				continue
			}
			if terr == nil {
				terr = f.putTail(t)
				if terr != nil {
					stop.Store(true)
				}
			}
		}
	}
	if ferr != nil {
		return ferr
	}
	return terr
}

// tailOf reads u's block back raw and hashes it, if it is still the
// block u describes (its sector sums and xxh3 match). Safe from any
// goroutine: it uses nothing of the FS but the volume.
func (f *FS) tailOf(u *untailed, ss uint64, csum format.CsumType) (tailed, bool) {
	cl := uint64(csum.Len())
	if u.length%ss != 0 || uint64(len(u.sums)) != u.length/ss*cl {
		return tailed{}, false
	}
	buf := rawBuffer(int(u.length))
	defer putBuffer(buf)
	if f.st.Vol.ReadCopy(u.key.Offset, buf, 0) != nil {
		return tailed{}, false
	}
	for s := uint64(0); s < u.length; s += ss {
		sum := format.Checksum(csum, buf[s:s+ss])
		if !bytes.Equal(sum[:cl], u.sums[s/ss*cl:(s/ss+1)*cl]) {
			return tailed{}, false
		}
	}
	if blockHash(format.CsumXXH3, buf) != u.hash {
		return tailed{}, false
	}
	return tailed{u: u, strong: format.StrongDedupeHash(buf)}, true
}

// putTail adds t's tail to its entry, if the entry is still the one
// noted (the block may have been freed and its entry dropped since).
func (f *FS) putTail(t tailed) error {
	tr := f.tx.Tree(format.DedupeTree)
	b, err := getOptional(tr, t.u.key)
	if err != nil || b == nil {
		return err
	}
	d, err := format.UnmarshalDedupeItem(t.u.key.ObjectID, b)
	if err != nil {
		return err
	}
	if d.HashAlgo != format.CsumXXH3 || d.Strong != nil || d.Hash != t.u.hash || d.Length != t.u.length {
		return nil
	}
	d.Strong = &t.strong
	return tr.Put(t.u.key, format.MarshalDedupeItem(d))
}
