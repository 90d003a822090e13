// Command dedupegen writes deterministic test data for the dedupe
// benchmark: SIZE bytes in 128 KiB blocks of seeded random bytes, DUP
// percent of them copies of earlier blocks (as the btrfs dedupe thread's
// test data), or zeros.
//
//	dedupegen FILE SIZE DUP_PERCENT [SEED]     DUP_PERCENT -1: all zeros
//	dedupegen hashspeed                        one core's sha256, blake3, xxh3
//	                                           speed on 128 KiB blocks, MB/s
package main

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/zeebo/blake3"
	"github.com/zeebo/xxh3"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "hashspeed" {
		hashSpeed()
		return
	}
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: dedupegen FILE SIZE DUP_PERCENT [SEED]")
		os.Exit(2)
	}
	size, err1 := strconv.ParseInt(os.Args[2], 10, 64)
	dup, err2 := strconv.Atoi(os.Args[3])
	seed := uint64(1)
	if len(os.Args) > 4 {
		seed, _ = strconv.ParseUint(os.Args[4], 10, 64)
	}
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "dedupegen: bad SIZE or DUP_PERCENT")
		os.Exit(2)
	}
	f, err := os.Create(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "dedupegen:", err)
		os.Exit(1)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(seed, 7))
	const bs = 128 << 10
	var pool [][]byte
	zero := make([]byte, bs)
	for off := int64(0); off < size; off += bs {
		switch {
		case dup < 0:
			w.Write(zero)
		case len(pool) > 0 && r.IntN(100) < dup:
			w.Write(pool[r.IntN(len(pool))])
		default:
			b := make([]byte, bs)
			for i := 0; i < bs; i += 8 {
				v := r.Uint64()
				for j := 0; j < 8; j++ {
					b[i+j] = byte(v >> (8 * j))
				}
			}
			if len(pool) < 4096 {
				pool = append(pool, b)
			}
			w.Write(b)
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "dedupegen:", err)
		os.Exit(1)
	}
	f.Close()
}

// hashSpeed prints the raw single-core hash speed the dedupe benchmark
// compares its throughput with.
func hashSpeed() {
	buf := make([]byte, 128<<10)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for _, h := range []struct {
		name string
		sum  func([]byte)
	}{
		{"sha256", func(b []byte) { sha256.Sum256(b) }},
		{"blake3", func(b []byte) { blake3.Sum256(b) }},
		{"xxh3", func(b []byte) { xxh3.Hash128(b) }},
	} {
		n, start := 0, time.Now()
		for time.Since(start) < time.Second {
			h.sum(buf)
			n++
		}
		fmt.Printf("%s %.0f MB/s\n", h.name, float64(n*len(buf))/time.Since(start).Seconds()/1e6)
	}
}
