// Command postmark runs a PostMark-like workload (Katcher 1997: a pool of
// small files, then transactions that each create or delete one file and
// read or append to another, then delete everything) through the ddfs Go
// API with a chosen online discard policy, committing every -commit
// transactions as a mounted filesystem's periodic commit would.
//
//	postmark -img IMG -discard off|sync|async [-files 5000] [-tx 20000]
//	         [-min 4K] [-max 64K] [-commit 200] [-seed 1]
//
// Output: one line of JSON on stdout: transactions per second over the
// transaction phase, total ops per second over all phases, discards issued
// and bytes discarded, what stays pending, and the image's allocated bytes.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/units"
	"github.com/ddfs/ddfs/pkg/volume"
)

type result struct {
	Discard       string  `json:"discard"`
	Files         int     `json:"files"`
	Transactions  int     `json:"transactions"`
	TxPerSec      float64 `json:"tx_per_sec"`
	OpsPerSec     float64 `json:"ops_per_sec"`
	Seconds       float64 `json:"seconds"`
	Discards      uint64  `json:"discards"`
	DiscardBytes  uint64  `json:"discard_bytes"`
	PendingBytes  uint64  `json:"pending_bytes"`
	Commits       int     `json:"commits"`
	CloseSeconds  float64 `json:"close_seconds"`
	TxDiscards    uint64  `json:"tx_phase_discards"`
	TxDiscardMB   uint64  `json:"tx_phase_discard_mb"`
	AllocatedHost int64   `json:"image_allocated_bytes"`
}

func main() {
	img := flag.String("img", "", "image file (made with mkfs.ddfs)")
	discard := flag.String("discard", "off", "online discard policy: off, sync, async")
	files := flag.Int("files", 5000, "initial files")
	txs := flag.Int("tx", 20000, "transactions")
	minS := flag.String("min", "4K", "smallest file")
	maxS := flag.String("max", "64K", "largest file")
	every := flag.Int("commit", 200, "commit every N transactions")
	seed := flag.Uint64("seed", 1, "random seed")
	prof := flag.String("cpuprofile", "", "write a CPU profile here")
	flag.Parse()
	if *prof != "" {
		pf, err := os.Create(*prof)
		if err == nil && pprof.StartCPUProfile(pf) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(*img, *discard, *files, *txs, *minS, *maxS, *every, *seed); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "postmark:", err)
		os.Exit(1)
	}
}

func run(img, discard string, files, txs int, minS, maxS string, every int, seed uint64) error {
	policy, err := format.ParseDiscardPolicy(discard)
	if err != nil {
		return err
	}
	lo, err := units.ParseSize(minS)
	if err != nil {
		return err
	}
	hi, err := units.ParseSize(maxS)
	if err != nil {
		return err
	}
	st, err := store.Open([]string{img}, volume.Options{Write: true})
	if err != nil {
		return err
	}
	if err := st.UpdateSettings(func(s *format.Settings) error { s.Discard = policy; return nil }); err != nil {
		return err
	}
	f, err := fsys.New(st, fsys.Options{})
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(seed, 42))
	buf := make([]byte, hi)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	size := func() uint64 { return lo + uint64(r.Int64N(int64(hi-lo+1))) }
	var live []string
	next := 0
	commits, ops := 0, 0
	create := func() error {
		p := fmt.Sprintf("/pm/f%07d", next)
		next++
		in, err := f.Create(p, fsys.Attr{Mode: syscall.S_IFREG | 0o644})
		if err != nil {
			return err
		}
		live = append(live, p)
		ops++
		return f.WriteAt(in, buf[:size()], 0)
	}
	remove := func(i int) error {
		p := live[i]
		live[i] = live[len(live)-1]
		live = live[:len(live)-1]
		ops++
		return f.Remove(p)
	}
	commit := func() error { commits++; return f.Sync() }
	start := time.Now()
	if _, err := f.Mkdir("/pm", fsys.Attr{Mode: syscall.S_IFDIR | 0o755}); err != nil {
		return err
	}
	for range files {
		if err := create(); err != nil {
			return err
		}
	}
	if err := commit(); err != nil {
		return err
	}
	txStart := time.Now()
	rd := make([]byte, hi)
	for t := 1; t <= txs; t++ {
		if r.IntN(2) == 0 || len(live) == 0 {
			err = create()
		} else {
			err = remove(r.IntN(len(live)))
		}
		if err != nil {
			return err
		}
		if len(live) > 0 {
			in, err := f.Resolve(live[r.IntN(len(live))], false)
			if err != nil {
				return err
			}
			if r.IntN(2) == 0 {
				_, err = f.ReadAt(in, rd[:min(in.Size, uint64(len(rd)))], 0)
			} else {
				err = f.WriteAt(in, buf[:size()/4], in.Size)
			}
			if err != nil {
				return err
			}
			ops++
		}
		if t%every == 0 {
			if err := commit(); err != nil {
				return err
			}
		}
	}
	if err := commit(); err != nil {
		return err
	}
	txSecs := time.Since(txStart).Seconds()
	txDiscards := st.DiscardStats()
	for len(live) > 0 {
		if err := remove(len(live) - 1); err != nil {
			return err
		}
		if len(live)%(every*2) == 0 {
			if err := commit(); err != nil {
				return err
			}
		}
	}
	if err := commit(); err != nil {
		return err
	}
	// Close is part of the work: async discards what it batched there.
	closeStart := time.Now()
	if err := f.Close(); err != nil {
		return err
	}
	closeSecs := time.Since(closeStart).Seconds()
	secs := time.Since(start).Seconds()
	ds := st.DiscardStats()
	var fi syscall.Stat_t
	if err := syscall.Stat(img, &fi); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(result{
		Discard: discard, Files: files, Transactions: txs, TxPerSec: float64(txs) / txSecs,
		OpsPerSec: float64(ops) / secs, Seconds: secs, Discards: ds.Discards, DiscardBytes: ds.Bytes,
		PendingBytes: ds.PendingBytes, Commits: commits, CloseSeconds: closeSecs, TxDiscards: txDiscards.Discards, TxDiscardMB: txDiscards.Bytes >> 20, AllocatedHost: fi.Blocks * 512,
	})
}
