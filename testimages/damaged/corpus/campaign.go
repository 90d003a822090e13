package corpus

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// The damage campaign: every item of every tree deleted, a field of
// every item changed, every copy of one node lost, a system chunk array
// field edited; each on a fresh copy of one base image. The oracle is
// Expected, written down from populate, not read from any image: a file
// "reads back" when its bytes equal what populate wrote.

// Base builds the campaign's base image: one device (metadata dup) or
// two (raid1 everything), as the corpus kinds' base.
func Base(devs int) ([]*device.MemDevice, error) {
	return base(Kind{Name: fmt.Sprintf("campaign-%d", devs), Devs: devs})
}

// Expected is every file populate writes, by path, with its bytes.
func Expected() map[string][]byte {
	m := map[string][]byte{
		"/small": []byte("hello, world\n"), "/mid": Content(1, 8192), "/big": Content(2, 20<<10),
		"/dup1": Content(3, 8<<10), "/dup2": Content(3, 8<<10), "/dir/hard": Content(2, 20<<10), "/last": {},
	}
	for i := 0; i < 40; i++ {
		m[fmt.Sprintf("/dir/f%02d", i)] = Content(10+i, 50+i*20)
	}
	return m
}

// Readable opens a copy of devs read-only and returns the files of
// Expected that read back exactly (none when the set does not open).
func Readable(devs []*device.MemDevice) map[string]bool {
	out := map[string]bool{}
	work := make([]device.Device, len(devs))
	for i, d := range devs {
		work[i] = d.Snapshot()
	}
	vol, err := volume.FromDevices(work, false)
	if err != nil {
		return out
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		vol.Close()
		return out
	}
	defer st.Close()
	f, err := fsys.New(st, fsys.Options{Now: epoch})
	if err != nil {
		return out
	}
	for p, want := range Expected() {
		if got, err := readAll(f, p, len(want)); err == nil && bytes.Equal(got, want) {
			out[p] = true
		}
	}
	return out
}

// readAll reads a file, refusing one larger than want (a damaged size
// must not make the oracle allocate it).
func readAll(f *fsys.FS, p string, want int) ([]byte, error) {
	in, err := f.Resolve(p, false)
	if err != nil {
		return nil, err
	}
	if in.Size != uint64(want) {
		return nil, fmt.Errorf("%s: size %d", p, in.Size)
	}
	b := make([]byte, want)
	if want == 0 {
		return b, nil
	}
	n, err := f.ReadAt(in, b, 0)
	if n == want {
		err = nil // io.EOF with the last byte
	}
	return b[:n], err
}

// Damage applies fn to a copy of base, as Build applies a kind.
func Damage(base []*device.MemDevice, fn func(*Surgeon)) ([]*device.MemDevice, error) {
	devs := make([]*device.MemDevice, len(base))
	for i, d := range base {
		devs[i] = d.Snapshot()
	}
	return devs, apply(devs, fn)
}

// Variant is one damage of the campaign.
type Variant struct {
	Name   string
	Damage func(*Surgeon)
}

// Variants lists the campaign over base: every item of trees 1-7 deleted
// and (fields > 0) up to fields of its 8-byte words changed, chosen by
// seed; every node of every tree with all its copies lost; each stripe
// offset and devid of the system chunk array edited.
func Variants(base []*device.MemDevice, fields int, seed int64) ([]Variant, error) {
	s, err := newSurgeon(Snapshots(base))
	if err != nil {
		return nil, err
	}
	defer s.tx.Abort()
	rng := rand.New(rand.NewSource(seed))
	var out []Variant
	sb := s.st.Super()
	for id := format.ChunkTree; id <= format.DiscardTree; id++ {
		if sb.Roots.Root(id).Logical == 0 {
			continue
		}
		err := s.st.Tree(id).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
			out = append(out, itemVariants(id, it, fields, rng)...)
			return true, nil
		})
		if err != nil {
			return nil, err
		}
		err = inspect.DumpTree(s.st, id, 0, func(n inspect.NodeDump) error {
			out = append(out, nodeLost(id, n.Logical))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	out = append(out, sysArrayVariants(sb)...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Snapshots copies devs (their durable state).
func Snapshots(devs []*device.MemDevice) []*device.MemDevice {
	out := make([]*device.MemDevice, len(devs))
	for i, d := range devs {
		out[i] = d.Snapshot()
	}
	return out
}

func itemVariants(id format.TreeID, it format.Item, fields int, rng *rand.Rand) []Variant {
	k := it.Key
	name := fmt.Sprintf("%v/%s/%d/%d", id, inspect.KeyTypeName(k.Type), k.ObjectID, k.Offset)
	out := []Variant{{"delete " + name, func(s *Surgeon) { s.Del(id, k) }}}
	words := (len(it.Data) + 7) / 8
	for _, w := range rng.Perm(words)[:min(fields, words)] {
		off := w * 8
		out = append(out, Variant{fmt.Sprintf("field %s@%d", name, off), func(s *Surgeon) {
			b := s.Get(id, k)
			if off < len(b) {
				b[off] ^= 0x01 // the low byte of a little-endian field: one off
				s.Put(id, k, b)
			}
		}})
	}
	return out
}

// nodeLost flips a byte in the middle of every copy of the node at l.
func nodeLost(id format.TreeID, l uint64) Variant {
	return Variant{fmt.Sprintf("node %v/%d all copies", id, l), func(s *Surgeon) {
		s.Raw(func(st *store.FS) {
			m, err := inspect.Map(st.Vol, l)
			if err != nil {
				s.fail(err)
				return
			}
			for c := range m.Copies {
				flipAt(s.Devs[m.Copies[c].DevID-1], int64(m.Copies[c].Offset+ns/2))
			}
		})
	}}
}

// sysArrayVariants edit each stripe of each system chunk in every
// superblock copy (checksums recomputed): offset moved by a node and by a
// MiB, devid changed.
func sysArrayVariants(sb format.Superblock) []Variant {
	var out []Variant
	for ci, sc := range sb.SysChunks {
		for si := range sc.Chunk.Stripes {
			for _, e := range []struct {
				what string
				fn   func(*format.Stripe)
			}{{"offset+node", func(st *format.Stripe) { st.Offset += ns }}, {"offset+1M", func(st *format.Stripe) { st.Offset += 1 << 20 }},
				{"devid", func(st *format.Stripe) { st.DevID = st.DevID%2 + 1 }}} {
				name := fmt.Sprintf("sysarray %d stripe %d %s", ci, si, e.what)
				out = append(out, Variant{name, func(s *Surgeon) {
					s.rewriteSupers(func(sb *format.Superblock) {
						c := *sb.SysChunks[ci].Chunk
						c.Stripes = append([]format.Stripe(nil), c.Stripes...)
						e.fn(&c.Stripes[si])
						sb.SysChunks[ci].Chunk = &c
					})
				}})
			}
		}
	}
	return out
}

// rewriteSupers changes every superblock copy of every device.
func (s *Surgeon) rewriteSupers(change func(*format.Superblock)) {
	s.Raw(func(*store.FS) {
		for _, d := range s.Devs {
			for _, off := range format.SuperblockOffsets {
				b := make([]byte, format.SuperblockSize)
				if n, _ := d.ReadAt(b, int64(off)); n != len(b) {
					continue
				}
				sb, err := format.UnmarshalSuperblock(b)
				if err != nil {
					continue // not a copy this device holds
				}
				change(sb)
				nb, err := format.MarshalSuperblock(sb)
				s.fail(err)
				d.WriteAt(nb, int64(off))
			}
			d.Flush()
		}
	})
}
