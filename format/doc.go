// Package format is the on-disk format of ddfs: pure encoders and decoders
// of the superblock, B+tree nodes and items, with no I/O. The byte-level
// specification is FORMAT.md in this folder; the section numbers cited in
// comments (§3.1, §4.4, …) are its sections, and names here are its names.
//
// All integers are little-endian and written at named offsets. Every
// decoder validates what it reads and fails with an error that matches
// ErrCorrupt (and, where it applies, ErrBadMagic, ErrChecksum,
// ErrUnsupported or ErrShort) under errors.Is.
//
// # A device
//
// Each device of the set carries a superblock copy at 64 KiB, 64 MiB and
// 256 GiB (when the device is large enough). The first MiB and the 64 KiB
// at each copy are never given to chunks; the rest holds chunk stripes,
// which map the filesystem's logical address space (FORMAT.md §3, §4.4, §7):
//
//	physical offset on a device
//	0        64K  68K      1M                                 64M    +64K          256G   +64K
//	+--------+----+--------+--------+--------+----------------+------+-------------+------+-----...
//	|        | SB |        | stripe | stripe |                |  SB  |             |  SB  |
//	|        |    |        |  of A  |  of B  |                |copy 1|             |copy 2|
//	+--------+----+--------+--------+--------+----------------+------+-------------+------+-----...
//	<----- no chunks ------>                                  <no ch.>             <no ch.>
//
//	logical address space (one per filesystem; 0 is never mapped)
//	+------------------+---------------------------+--------------------------...
//	| chunk A (system) | chunk B (metadata, raid1) | chunk C (data, raid0)
//	+------------------+---------------------------+--------------------------...
//	  1 stripe           2 stripes on 2 devices      N stripes, 64 KiB striping
//
// The superblock (4096 bytes, FORMAT.md §3) holds the checksum, magic
// "_DDFS_SB", version and feature flags, the geometry, the root set of
// every tree with four backups, and the system chunk array that maps the
// chunk tree's own nodes.
//
// # A node
//
// Every tree is a copy-on-write B+tree of node_size nodes (FORMAT.md §4.1).
// A leaf packs item headers forward and item values backward from the end;
// an internal node holds key pointers:
//
//	0      32     48        56           64      72        76      77     80
//	+------+------+---------+------------+-------+---------+-------+------+
//	| csum | fsid | logical | generation | owner | nritems | level | rsvd |  header
//	+------+------+---------+------------+-------+---------+-------+------+
//
//	leaf:     | header | key,off,size | key,off,size | ... free ... | data 1 | data 0 |
//	internal: | header | key,child,gen | key,child,gen | ... free (zero) ...        |
//	          0        80                                                   node_size
//
// Keys (FORMAT.md §4.2) are 17 bytes, (objectid u64, type u8, offset u64),
// ordered field by field; the key type says what an item holds (§6).
package format
