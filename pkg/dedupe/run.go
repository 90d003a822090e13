package dedupe

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// RunOptions choose what Run dedupes and how.
type RunOptions struct {
	Dir     string // image folder to dedupe ("" or "/": all)
	Block   uint64 // 0: the image's dedupe block
	CDC     bool   // content-defined chunks (with Block as the average)
	Hash    format.CsumType
	MinSize uint64 // files smaller than this are left alone
	// NoPrefilter reads and hashes every block not yet indexed, without
	// first ruling out by stored sector sums those that cannot repeat.
	NoPrefilter bool
	// ReadAll reads every block even where the image's strong sector sums
	// could tell it equals one read before (fsys.SumShares).
	ReadAll bool
	// Serial reads on the FS's goroutine only (no fsys.BlockAhead).
	Serial   bool
	Window   uint64 // most file data read and rewritten at a time (0: 8 MiB)
	Progress func(n int64)
}

// RunResult is what a run did; the JSON keys are dedupe-tool run's.
type RunResult struct {
	FreedBytes     uint64  `json:"freed_bytes"`
	ExtentsShared  uint64  `json:"extents_shared"`
	Seconds        float64 `json:"seconds"`
	IndexEntries   uint64  `json:"index_entries"`
	Files          uint64  `json:"files"`
	RewrittenBytes uint64  `json:"rewritten_bytes"`
	// PrefilteredBytes: file bytes left unread because the stored sector
	// sums of their extents' blocks match no other block.
	PrefilteredBytes uint64 `json:"prefiltered_bytes"`
	// AdoptedBytes: of RewrittenBytes, new blocks indexed in place (their
	// extent cut where they lay) instead of written again.
	AdoptedBytes uint64 `json:"adopted_bytes"`
	// SumSharedBytes: of RewrittenBytes, blocks shared unread because
	// their stored strong (sha256, blake3) sector sums equal those of a
	// block read before; 0 on images with crc32c or xxhash64 sums.
	SumSharedBytes uint64 `json:"sum_shared_bytes"`
	// AheadBytes: of RewrittenBytes, blocks read, verified and hashed
	// on another core ahead of their turn (the rest was read in turn).
	AheadBytes uint64 `json:"ahead_bytes"`
	// Where Seconds went: listing the files, the stored-sum prefilter
	// (every pass's), and passing the files through Rededupe.
	ListSeconds      float64 `json:"list_seconds"`
	PrefilterSeconds float64 `json:"prefilter_seconds"`
	DedupeSeconds    float64 `json:"dedupe_seconds"`
}

// Run dedupes the data already in the image: every regular file under
// o.Dir goes through fsys.Rededupe, committing in bounded transactions
// between windows (the FS's batch limits), so a kill leaves a consistent
// image and a rerun continues where the last commit ended.
func Run(f *fsys.FS, o RunOptions) (*RunResult, error) {
	t0 := time.Now()
	before, err := GetStatus(f.Store())
	if err != nil {
		return nil, err
	}
	ro := fsys.RededupeOptions{Block: o.Block, CDC: o.CDC, Hash: o.Hash, Window: o.Window}
	if !o.ReadAll && f.Store().Super().CsumType.Strong() {
		ro.Sums = fsys.NewSumShares(maxSumShares)
	}
	if ro.Block == 0 {
		ro.Block = f.Store().Super().Settings.DedupeBlockSize()
	}
	if ro.Block < 4<<10 || ro.Block > 8<<20 || ro.Block&(ro.Block-1) != 0 {
		return nil, fmt.Errorf("dedupe block %d: want a power of two 4K..8M", ro.Block)
	}
	if ro.Window != 0 {
		ro.Window = max(ro.Window/ro.Block*ro.Block, ro.Block)
	}
	res := &RunResult{}
	var st fsys.RededupeStats
	// Fixed blocks are fingerprinted from the stored sector sums first:
	// only extents holding a block that may repeat are read and hashed.
	parts := uint64(1)
	if !ro.CDC && !o.NoPrefilter {
		parts += before.LogicalBytes / ro.Block / maxPrints
	}
	files, err := newFileList(f, o.Dir)
	if err != nil {
		return nil, err
	}
	t1 := time.Now()
	res.ListSeconds = t1.Sub(t0).Seconds()
	var plan []planned
	for part := uint64(0); part < parts; part++ {
		if !ro.CDC && !o.NoPrefilter {
			want, err := prefilter(f, o, files, ro.Block, part, parts, ro.Sums != nil)
			if err != nil {
				return nil, err
			}
			ro.Want, plan = want.has, want.plan
		} else if files.pending {
			if err := files.each(f, 0, func(int, *fsys.Inode) error { return nil }); err != nil {
				return nil, err
			}
		}
		t2 := time.Now()
		res.PrefilterSeconds += t2.Sub(t1).Seconds()
		if err := rededupeAll(f, o, files.inos, ro, plan, &st, res, part == 0); err != nil {
			return nil, err
		}
		t1 = time.Now()
		res.DedupeSeconds += t1.Sub(t2).Seconds()
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	after, err := GetStatus(f.Store())
	if err != nil {
		return nil, err
	}
	if before.PhysicalBytes > after.PhysicalBytes {
		res.FreedBytes = before.PhysicalBytes - after.PhysicalBytes
	}
	res.ExtentsShared, res.RewrittenBytes, res.PrefilteredBytes, res.AdoptedBytes = st.Shared, st.Rewritten, st.Skipped, st.Adopted
	res.SumSharedBytes, res.AheadBytes = st.SumShared, st.Ahead
	res.IndexEntries = after.IndexEntries
	res.Seconds = time.Since(t0).Seconds()
	return res, nil
}

// maxSumShares bounds the memory of the blocks a run learns for sharing
// on strong sums (120 bytes each: 35k blocks, 4.3 GiB of distinct 128 KiB
// blocks); past it, blocks are read.
const maxSumShares = 4 << 20

// rededupeAll passes every file of files through fsys.Rededupe,
// committing at the FS's safe points between windows. A BlockAhead reads
// the blocks of plan (the prefilter's) meanwhile on another core.
func rededupeAll(f *fsys.FS, o RunOptions, files []uint64, ro fsys.RededupeOptions, plan []planned, st *fsys.RededupeStats, res *RunResult, count bool) error {
	if len(plan) > 0 && !o.Serial {
		ro.Ahead = f.NewBlockAhead(ro.Block, ro.Hash)
		defer ro.Ahead.Close()
	}
	return eachFile(f, files, o.MinSize, func(seq int, in *fsys.Inode) error {
		if count {
			res.Files++
		}
		ro.Ahead.Begin(seq)
		step := f.Rededupe(in, ro, st)
		for {
			plan = feed(ro.Ahead, plan, seq)
			was := st.Rewritten
			more, err := step()
			if err != nil {
				return err
			}
			if o.Progress != nil {
				o.Progress(int64(st.Rewritten - was))
			}
			if !more {
				return nil
			}
			if err := f.MaybeCommit(); err != nil {
				return err
			}
		}
	})
}

// feed plans the next blocks of plan, from file seq on, while the
// BlockAhead has room; it returns the rest.
func feed(ra *fsys.BlockAhead, plan []planned, seq int) []planned {
	if ra.Room() == 0 {
		return plan
	}
	for len(plan) > 0 && int(plan[0].seq) < seq {
		plan = plan[1:]
	}
	for n := ra.Room(); n > 0 && len(plan) > 0; n-- {
		p := plan[0]
		if !ra.Plan(int(p.seq), p.off, p.disk, uint64(p.n)) {
			break // no room for it yet
		}
		plan = plan[1:]
	}
	ra.Flush()
	return plan
}

// DryRun changes nothing: it estimates what Run would free from the
// unique bytes of the files under o.Dir at o's block size (exact for a
// whole image whose data is not yet deduped or compressed).
func DryRun(f *fsys.FS, o RunOptions) (*RunResult, error) {
	t0 := time.Now()
	block := o.Block
	if block == 0 {
		block = f.Store().Super().Settings.DedupeBlockSize()
	}
	eo := EstimateOptions{Blocks: []uint64{block}, Progress: o.Progress}
	if o.CDC {
		eo = EstimateOptions{CDC: block, Progress: o.Progress}
	}
	e, err := NewEstimator(eo)
	if err != nil {
		return nil, err
	}
	root := strings.TrimPrefix(path.Clean("/"+o.Dir), "/")
	if root == "" {
		root = "."
	}
	if err := e.AddFS(f.IOFS(), root); err != nil {
		return nil, err
	}
	est, err := e.Result()
	if err != nil {
		return nil, err
	}
	st, err := GetStatus(f.Store())
	if err != nil {
		return nil, err
	}
	res := &RunResult{Files: est.Files, IndexEntries: est.Sizes[0].IndexEntries, Seconds: time.Since(t0).Seconds()}
	if u := est.Sizes[0].UniqueBytes; st.PhysicalBytes > u {
		res.FreedBytes = st.PhysicalBytes - u
	}
	return res, nil
}
