package inband

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/codec"
	"github.com/ddfs/ddfs/pkg/store"
)

// Strong tails (FORMAT.md §6.8). An xxh3 match must be proven before it
// is shared: by a read of the extent, or, when the entry carries the
// first 20 bytes of its block's BLAKE3, by the new block's BLAKE3 alone.
// Hashing every new block with BLAKE3 as it is written costs what xxh3
// saves, so the tails are made while a commit waits for the devices to
// take its data: a slow device (where reading a backup's duplicates back
// would cost most) leaves time for all of them, a fast one for few (and
// reads back from it are cheap). The tail is hashed from the extent read
// back (and decompressed), checked against the block's xxh3 and, when the
// write computed them, its sector sums: it describes the bytes written.

// untailed is an xxh3 entry made in the running transaction.
type untailed struct {
	key         format.Key
	hash        [format.CsumSize]byte
	length      uint64
	sums        []byte // the block's sector sums, as written (raw whole-sector blocks), or nil
	diskLen     uint64
	ram         uint64
	compression format.Compression
}

// maxUntailed bounds the entries a transaction remembers (8 GiB of
// 128 KiB blocks, about 200 bytes each); the rest stay without a tail.
const maxUntailed = 1 << 16

// noteUntailed remembers a new entry (of the hash algo) for
// TailWhileFlushing, if it is xxh3 and tails are asked for.
func (x *Index) noteUntailed(u untailed, algo format.CsumType) {
	if !x.opt.StrongTails || algo != format.CsumXXH3 || len(x.untailed) >= maxUntailed {
		return
	}
	x.untailed = append(x.untailed, u)
}

type tailed struct {
	u      *untailed
	strong [format.DedupeHashLen]byte
}

// TailWhileFlushing flushes the devices (the data the commit of tx
// will reference is written) and, until the flush returns, gives the
// transaction's new xxh3 entries their tails, hashed on every core.
func (x *Index) TailWhileFlushing(tx *store.Txn) error {
	list := x.untailed
	x.untailed = nil
	if len(list) == 0 || tx == nil {
		return nil
	}
	sb := x.st.Super()
	ss, csum := uint64(sb.SectorSize), sb.CsumType
	flushed := make(chan error, 1)
	go func() { flushed <- x.st.Vol.Flush() }()
	var stop atomic.Bool
	work := make(chan *untailed)
	cpus := runtime.GOMAXPROCS(0)
	results := make(chan tailed, cpus)
	var wg sync.WaitGroup
	for range cpus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range work {
				if t, ok := x.tailOf(u, ss, csum); ok {
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
				terr = putTail(tx, t)
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

// tailOf reads u's block back and hashes it, if it is still the block u
// describes: its xxh3, and the sector sums the write computed when it
// has them. A compressed block is decompressed first. Safe from any
// goroutine: it uses nothing but the volume.
func (x *Index) tailOf(u *untailed, ss uint64, csum format.CsumType) (tailed, bool) {
	n := u.diskLen
	if u.compression == format.CompressNone {
		n = (u.length + ss - 1) / ss * ss
	}
	if n == 0 || n > u.diskLen {
		return tailed{}, false
	}
	buf := getBuf(int(n))
	defer putBuf(buf)
	if x.st.Vol.ReadCopy(u.key.Offset, buf, 0) != nil {
		return tailed{}, false
	}
	data := buf
	if u.compression != format.CompressNone {
		d, err := codec.Decompress(buf, u.compression, u.ram)
		if err != nil {
			return tailed{}, false
		}
		data = d
	} else if u.sums != nil && !sumsMatch(buf, u.sums, ss, csum) {
		return tailed{}, false
	}
	if uint64(len(data)) < u.length || BlockHash(format.CsumXXH3, data[:u.length]) != u.hash {
		return tailed{}, false
	}
	return tailed{u: u, strong: format.StrongDedupeHash(data[:u.length])}, true
}

// sumsMatch reports whether the sectors of p have the given sums.
func sumsMatch(p, sums []byte, ss uint64, csum format.CsumType) bool {
	cl := uint64(csum.Len())
	if uint64(len(sums)) != uint64(len(p))/ss*cl || uint64(len(p))%ss != 0 {
		return false
	}
	for s := uint64(0); s < uint64(len(p)); s += ss {
		sum := format.Checksum(csum, p[s:s+ss])
		if !bytes.Equal(sum[:cl], sums[s/ss*cl:(s/ss+1)*cl]) {
			return false
		}
	}
	return true
}

// putTail adds t's tail to its entry, if the entry is still the one
// noted (the block may have been freed and its entry dropped since).
func putTail(tx *store.Txn, t tailed) error {
	tr := tx.Tree(format.DedupeTree)
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
