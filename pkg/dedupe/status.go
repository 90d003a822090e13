package dedupe

import (
	"strconv"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/inband"
	"github.com/ddfs/ddfs/pkg/store"
)

// Status is `dedupe-tool status` and the data part of `ddfs df`.
// The JSON keys are an interface: keep them.
type Status struct {
	Enabled            bool   `json:"enabled"`
	BlockSize          uint64 `json:"block_size"`
	Hash               string `json:"hash"`
	Chunking           string `json:"chunking"`
	Compression        string `json:"compression"`
	LogicalBytes       uint64 `json:"logical_bytes"`        // file bytes that have data (holes excluded)
	PhysicalBytes      uint64 `json:"physical_bytes"`       // bytes of data extents on disk (one copy)
	DedupeSavedBytes   uint64 `json:"dedupe_saved_bytes"`   // bytes not stored again: (references - 1) x size of each deduped extent
	CompressSavedBytes uint64 `json:"compress_saved_bytes"` // decompressed minus on-disk bytes of compressed extents
	DedupeHits         uint64 `json:"dedupe_hits"`
	IndexEntries       uint64 `json:"index_entries"`
	IndexDiskBytes     uint64 `json:"index_disk_bytes"`
	IndexMemoryBytes   uint64 `json:"index_memory_bytes"` // the in-memory cache a writer keeps for these entries
}

// GetStatus reads the superblock counters (FORMAT.md §3.9); on an
// image no writer that keeps them has committed to yet, it recounts them
// by scanning the fs, extent and dedupe trees.
func GetStatus(fs *store.FS) (*Status, error) {
	sb := fs.Super()
	s := sb.Settings
	st := &Status{Enabled: s.Dedupe, BlockSize: s.DedupeBlockSize(), Hash: "sha256", Chunking: "fixed", Compression: s.Compression.String(), DedupeHits: s.DedupeHits}
	if s.DedupeCDC {
		st.Chunking = "cdc"
	}
	if s.DedupeHash.ValidDedupeHash() {
		st.Hash = s.DedupeHash.String() // else 0: sha256
	}
	if s.Compression == format.CompressZstd {
		st.Compression = "zstd:" + strconv.Itoa(max(int(s.CompressionLevel), 1))
	}
	c, exact := fs.Counters()
	if !exact {
		var err error
		if c, err = fs.Recount(); err != nil {
			return nil, err
		}
	}
	st.LogicalBytes, st.PhysicalBytes = c.LogicalBytes, c.PhysicalBytes
	st.DedupeSavedBytes, st.CompressSavedBytes = c.DedupeSavedBytes, c.CompressSavedBytes
	st.IndexEntries = c.IndexEntries
	st.IndexDiskBytes = c.IndexNodes * uint64(sb.NodeSize)
	st.IndexMemoryBytes = st.IndexEntries * inband.EntryMemory
	return st, nil
}
