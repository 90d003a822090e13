package inband

// EntryMemory is what one cached index entry costs a writer: the prefix
// and the extent address (16 bytes) plus the map's share: heap in use at
// 1M entries measured 42.6-43.7 bytes with Go 1.26, rounded up;
// TestCacheMemory fails if the measurement exceeds it.
const EntryMemory = 48

// cache is the in-memory cache in front of the dedupe tree: hash prefix
// -> extent logical, 16 bytes of payload per entry, bounded.
type cache struct {
	m   map[uint64]uint64
	max int
}

func (c *cache) get(prefix uint64) (uint64, bool) {
	l, ok := c.m[prefix]
	return l, ok
}

func (c *cache) put(prefix, logical uint64) {
	if c.m == nil {
		c.m = map[uint64]uint64{}
	}
	if len(c.m) >= c.max {
		for k := range c.m { // evict an arbitrary entry: the tree still has it
			delete(c.m, k)
			break
		}
	}
	c.m[prefix] = logical
}

func (c *cache) del(prefix, logical uint64) {
	if c.m[prefix] == logical {
		delete(c.m, prefix)
	}
}

// Len is the number of cached entries.
func (c *cache) Len() int { return len(c.m) }
