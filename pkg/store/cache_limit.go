package store

// LimitNodeCache bounds the clean node cache to n nodes (at least 16)
// from now on: a tool that must stay small (dedupe-tool run) trades
// rereads for memory.
func (fs *FS) LimitNodeCache(n int) {
	fs.cache.max = max(n, 16)
}
