package check

// balances maps a child inode to its names balance (fs.go): open
// addressing with linear probing and backward-shift deletion. Nearly every
// entry is added and deleted a few items later (a file's DIR_INDEX in its
// directory, then its INODE_REF); a Go map leaves a tombstone per delete
// and rebuilds its tables every few thousand of them.
type balances struct {
	keys []uint64 // 0: an empty slot; a length that is a power of two
	vals []balance
	n    int  // entries in keys
	bits uint // len(keys) is 1<<bits
	// Key 0 is no inode, but the image's bytes decide: kept aside.
	hasZero bool
	zero    balance
}

func (t *balances) len() int {
	if t.hasZero {
		return t.n + 1
	}
	return t.n
}

// home is the first slot key k probes (Fibonacci hashing: inode numbers
// are dense, the multiply spreads them over the table).
func (t *balances) home(k uint64) int {
	return int((k * 0x9e3779b97f4a7c15) >> (64 - t.bits))
}

// find is k's slot, or the empty slot where it would go (ok false).
func (t *balances) find(k uint64) (i int, ok bool) {
	mask := len(t.keys) - 1
	for i = t.home(k); ; i = (i + 1) & mask {
		switch t.keys[i] {
		case k:
			return i, true
		case 0:
			return i, false
		}
	}
}

func (t *balances) has(k uint64) bool {
	if k == 0 {
		return t.hasZero
	}
	if t.n == 0 {
		return false
	}
	_, ok := t.find(k)
	return ok
}

// add moves k's balance by n names of fingerprint mark (added for n > 0,
// taken away otherwise); a balance that reaches zero is dropped.
func (t *balances) add(k uint64, mark uint64, n int64) {
	if n <= 0 {
		mark = -mark
	}
	if k == 0 {
		t.zero.n += n
		t.zero.h += mark
		t.hasZero = !t.zero.zero()
		return
	}
	if 4*(t.n+1) > 3*len(t.keys) {
		t.grow()
	}
	i, ok := t.find(k)
	if !ok {
		t.keys[i], t.vals[i] = k, balance{}
		t.n++
	}
	b := &t.vals[i]
	b.n += n
	b.h += mark
	if b.zero() {
		t.remove(i)
	}
}

// remove empties slot i and moves back each entry after it that probed
// past it, so that no lookup needs to skip a tombstone.
func (t *balances) remove(i int) {
	mask := len(t.keys) - 1
	for j := i; ; {
		j = (j + 1) & mask
		k := t.keys[j]
		if k == 0 {
			break
		}
		// The entry at j may fill the hole at i when i lies on its probe
		// path, from its home to j.
		if (j-t.home(k))&mask >= (j-i)&mask {
			t.keys[i], t.vals[i] = k, t.vals[j]
			i = j
		}
	}
	t.keys[i], t.vals[i] = 0, balance{}
	t.n--
}

func (t *balances) grow() {
	keys, vals := t.keys, t.vals
	t.bits = max(t.bits+1, 6)
	t.keys, t.vals = make([]uint64, 1<<t.bits), make([]balance, 1<<t.bits)
	for j, k := range keys {
		if k != 0 {
			i, _ := t.find(k)
			t.keys[i], t.vals[i] = k, vals[j]
		}
	}
}

// get is k's balance (zero when absent).
func (t *balances) get(k uint64) balance {
	if k == 0 {
		return t.zero
	}
	if t.n == 0 {
		return balance{}
	}
	i, ok := t.find(k)
	if !ok {
		return balance{}
	}
	return t.vals[i]
}
