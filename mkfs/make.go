package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/foreign"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/mkfs"
	"github.com/ddfs/ddfs/pkg/progress"
	"github.com/ddfs/ddfs/pkg/transfer"
	"github.com/ddfs/ddfs/pkg/units"
)

const examples = `  mkfs.ddfs -b 1G disk.img
      one 1 GiB image file: data single, metadata dup
  mkfs.ddfs -b 1T -d raid10 -m raid1c3 a.img b.img c.img d.img
      four sparse 1 TiB images (a few MiB allocated each)
  mkfs.ddfs -b 1T -d raid6 -m raid1c3 a.img b.img c.img d.img
      half the space usable, any two images may be lost (parity, no write hole)
  mkfs.ddfs -b 64G --alloc-policy ssd-metadata ssd0.img ssd1.img \
      hdd0.img:rotational=1,seek_speed=120,bandwidth=150M hdd1.img:rotational=1
  mkfs.ddfs -f /dev/loop0          overwrite whatever is on /dev/loop0
  mkfs.ddfs -b 1G -r rootfs.ext4 root.img
      the tree of an ext4 image (or squashfs, ISO 9660, FAT; IMAGE@N: a partition)
`

// newRoot is mkfs.ddfs's command: its flags, then makeFS.
func newRoot() *cobra.Command {
	c := cli.NewRoot("mkfs.ddfs [options] DEVICE[:key=value,...]...", "create a ddfs filesystem on image files or devices", "V")
	c.Example = strings.TrimRight(examples, "\n")
	c.Args = cobra.ArbitraryArgs
	fl := c.Flags()
	fl.SortFlags = false
	byteCount := fl.StringP("byte-count", "b", "", "size of image files to create (K, M, G, T suffixes)")
	force := fl.BoolP("force", "f", false, "overwrite an existing filesystem or partition table")
	nodiscard := fl.BoolP("nodiscard", "K", false, "do not discard the devices first (by default the whole device: BLKDISCARD, or hole punching on an image file)")
	label := fl.StringP("label", "L", "", "filesystem label")
	uuidStr := fl.StringP("uuid", "U", "", "filesystem UUID (default: random)")
	data := fl.StringP("data", "d", "", "data profile: single, dup, raid0, raid1, raid1c3, raid10, raid5, raid6")
	meta := fl.StringP("metadata", "m", "", "metadata profile (default dup on one device, raid1 on more)")
	sector := fl.StringP("sectorsize", "s", "4K", "sector size")
	node := fl.StringP("nodesize", "n", "16K", "B-tree node size")
	csum := fl.String("csum", "crc32c", "checksum: crc32c, xxhash64, sha256, blake3 (sha256, blake3: strong, so dedupe-tool run shares repeats without reading them, for a sha256/blake3 per sector on every write and read)")
	policy := fl.String("alloc-policy", "classic", "chunk allocation policy: classic, ssd-metadata, tiered")
	smallData := fl.String("small-data-max", "0", "data extents up to SIZE go to the metadata tier while it has room (ssd-metadata, tiered; 0 off)")
	rootdir := fl.StringP("rootdir", "r", "", "copy the contents of DIR, or of an ext4, squashfs, ISO 9660 or FAT image (IMAGE@N: a partition), into the new filesystem (keeps what cp -a keeps)")
	tarFile := fl.String("tar", "", "populate from a tar archive (FILE, or - for stdin; plain, gzip, zstd, xz or bzip2)")
	allRoot := fl.Bool("all-root", false, "make root (0:0) the owner of every file")
	forceUID := fl.Int64("force-uid", -1, "make UID the owner of every file")
	forceGID := fl.Int64("force-gid", -1, "make GID the group of every file")
	shrink := fl.Bool("shrink", false, "truncate image files to what the populated filesystem needs")
	dedupe := fl.Bool("dedupe", false, "dedupe data on every write path (blocks stored once, shared)")
	dedupeBlock := fl.String("dedupe-block", "128K", "dedupe block size: a power of two from 4K to 8M")
	dedupeHash := fl.String("dedupe-hash", mkfs.DefaultDedupeHash.String(), "dedupe hash: xxh3 (a twentieth of blake3's CPU; a match is proven by the BLAKE3 tail its entry gets while a commit waits for the disk, else read back and byte-compared), or blake3 or sha256 (collision resistant: every block hashed, a match shared unread)")
	chunking := fl.String("dedupe-chunking", "fixed", "fixed blocks, or cdc: content-defined (block/4..block*4, average block) so shifted data dedupes")
	verify := fl.Bool("dedupe-verify", false, "byte-compare a block with its match before sharing it")
	compress := fl.String("compress", "none", "compress data: zstd[:LEVEL] (1-19, default 3), s2 or none")
	quiet := fl.BoolP("quiet", "q", false, "print nothing on success")
	asJSON := fl.Bool("json", false, "print the summary as JSON")
	verbose := fl.BoolP("verbose", "v", false, "also print the chunks created")
	var stats cli.Stats
	cli.StatsVar(fl, &stats, "per-device I/O (requests, bytes, seeks, modeled time)")
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cli.Usagef("no device given")
		}
		return makeFS(args, c.OutOrStdout(), c.ErrOrStderr(), flagValues{
			byteCount: *byteCount, force: *force, nodiscard: *nodiscard, label: *label, uuid: *uuidStr, data: *data, meta: *meta,
			sector: *sector, node: *node, csum: *csum, policy: *policy, smallData: *smallData,
			rootdir: *rootdir, tarFile: *tarFile, allRoot: *allRoot, forceUID: *forceUID, forceGID: *forceGID,
			shrink: *shrink, dedupe: *dedupe, dedupeBlock: *dedupeBlock, dedupeHash: *dedupeHash,
			chunking: *chunking, verify: *verify, compress: *compress, quiet: *quiet, verbose: *verbose,
			asJSON: *asJSON, stats: stats})
	}
	return c
}

// flagValues are mkfs.ddfs's options as given.
type flagValues struct {
	byteCount, label, uuid, data, meta, sector, node, csum, policy, smallData string
	rootdir, tarFile, dedupeBlock, dedupeHash, chunking, compress             string
	forceUID, forceGID                                                        int64
	force, nodiscard, allRoot, shrink, dedupe, verify, quiet, verbose, asJSON bool
	stats                                                                     cli.Stats
}

// makeFS creates the filesystem on the DEVICE operands.
func makeFS(args []string, stdout, stderr io.Writer, f flagValues) error {
	o := mkfs.Options{Force: f.force, NoDiscard: f.nodiscard, Label: f.label}
	var err error
	if f.byteCount != "" {
		if o.ByteCount, err = units.ParseSize(f.byteCount); err != nil {
			return cli.Usagef("-b: %v", err)
		}
		if o.ByteCount == 0 { // 0 would read as no -b at all
			return cli.Usagef("-b: size %q must be positive", f.byteCount)
		}
	}
	if f.uuid != "" {
		u, err := uuid.Parse(f.uuid)
		if err != nil {
			return cli.Usagef("-U %s: not a UUID", f.uuid)
		}
		o.UUID = u
	}
	for _, p := range []struct {
		arg string
		dst **format.Profile
	}{{f.data, &o.Data}, {f.meta, &o.Metadata}} {
		if p.arg != "" {
			prof, err := format.ParseProfile(p.arg)
			if err != nil {
				return cli.Usagef("%v", err)
			}
			*p.dst = &prof
		}
	}
	for _, s := range []struct {
		arg string
		dst *uint32
		opt string
	}{{f.sector, &o.SectorSize, "sectorsize"}, {f.node, &o.NodeSize, "nodesize"}} {
		v, err := units.ParseSize(s.arg)
		if err != nil || v > 1<<20 {
			return cli.Usagef("--%s %s: invalid size", s.opt, s.arg)
		}
		*s.dst = uint32(v)
	}
	if o.Csum, err = format.ParseCsumType(f.csum); err != nil {
		return cli.Usagef("%v", err)
	}
	if o.AllocPolicy, err = format.ParseAllocPolicy(f.policy); err != nil {
		return cli.Usagef("%v", err)
	}
	for _, a := range args {
		spec, err := mkfs.ParseDeviceSpec(a)
		if err != nil {
			return cli.Usagef("%v", err)
		}
		o.Devices = append(o.Devices, spec)
	}
	if o.Time, err = sourceDateEpoch(); err != nil {
		return err
	}
	o.RootUID, o.RootGID = uint32(os.Getuid()), uint32(os.Getgid())
	o.Shrink = f.shrink
	if err := dataSettings(&o.Settings, f.dedupe, f.dedupeBlock, f.dedupeHash, f.compress); err != nil {
		return err
	}
	o.Settings.DedupeVerify = f.verify
	if o.Settings.SmallDataMax, err = units.ParseSize(f.smallData); err != nil {
		return cli.Usagef("--small-data-max %s: %v", f.smallData, err)
	}
	switch f.chunking {
	case "fixed":
	case "cdc":
		o.Settings.DedupeCDC = true
	default:
		return cli.Usagef("--dedupe-chunking %q: want fixed or cdc", f.chunking)
	}
	if err := populateOptions(&o, f.rootdir, f.tarFile, f.allRoot, f.forceUID, f.forceGID); err != nil {
		return err
	}
	if c, ok := o.Tar.(io.Closer); ok && o.Tar != os.Stdin {
		defer c.Close()
	}
	var bar *progress.Bar // ended before the summary is printed
	if fh, ok := stderr.(*os.File); ok && !f.quiet && !f.asJSON && cli.IsTerminal(fh) && (o.RootDir != "" || o.Tar != nil) {
		bar = progress.New(fh)
		defer bar.Done()
		o.Progress = bar.Add
		if o.RootDir != "" {
			go func() { // a total for the percentage, summed beside the build
				if total, ok := transfer.HostBytes([]string{o.RootDir}, false, 1<<20); ok {
					bar.SetTotal(total)
				}
			}()
		}
	}
	clean := onInterrupt()
	o.Created = clean.add
	made, err := mkfs.Make(o)
	clean.done()
	if err != nil {
		return err
	}
	defer made.Close()
	bar.Done()
	fs := made.Store()
	inspect.PrintStats(stderr, string(f.stats), inspect.StatsOf(fs))
	info := inspect.GetInfo(fs)
	switch {
	case f.asJSON:
		return cli.JSON(stdout, info)
	case !f.quiet:
		printSummary(stdout, info, inspect.GetDF(fs), f.verbose)
	}
	return nil
}

// printSummary prints what mkfs.btrfs prints after creating a filesystem.
// verbose adds the chunks, as mkfs.btrfs -v does.
func printSummary(w io.Writer, info *inspect.Info, df *inspect.DF, verbose bool) {
	label := info.Label
	if label == "" {
		label = "(none)"
	}
	fmt.Fprintf(w, "Label:              %s\n", label)
	fmt.Fprintf(w, "UUID:               %s\n", info.UUID)
	fmt.Fprintf(w, "Node size:          %d\n", info.NodeSize)
	fmt.Fprintf(w, "Sector size:        %d\n", info.SectorSize)
	fmt.Fprintf(w, "Filesystem size:    %s\n", units.Human(info.TotalBytes))
	fmt.Fprintf(w, "Block group profiles:\n")
	for _, t := range df.Types {
		fmt.Fprintf(w, "  %-17s %-10s %12s\n", strings.ToUpper(t.Type[:1])+t.Type[1:]+":", t.Profile, units.Human(t.Size))
	}
	fmt.Fprintf(w, "Checksum:           %s\n", info.Csum)
	fmt.Fprintf(w, "Allocation policy:  %s\n", info.AllocPolicy)
	fmt.Fprintf(w, "Number of devices:  %d\n", len(info.Devices))
	fmt.Fprintf(w, "Devices:\n   ID        SIZE  ROT  SEEK/S   BANDWIDTH  PATH\n")
	for _, d := range info.Devices {
		rot := 0
		if d.Rotational {
			rot = 1
		}
		fmt.Fprintf(w, "  %3d  %10s  %3d  %6d  %8s/s  %s\n", d.DevID, units.Human(d.Size), rot, d.SeekSpeed, units.Human(d.Bandwidth), d.Path)
	}
	if verbose {
		fmt.Fprintf(w, "Chunks:\n")
		for _, c := range info.Chunks {
			fmt.Fprintf(w, "  logical %d  length %s  %s/%s\n", c.Logical, units.Human(c.Length), c.Type, c.Profile)
		}
	}
}

// sourceDateEpoch reads SOURCE_DATE_EPOCH (reproducible-builds.org): the
// time every inode mkfs creates carries.
func sourceDateEpoch() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Time{}, nil
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds", v)
	}
	return time.Unix(sec, 0), nil
}

func populateOptions(o *mkfs.Options, rootdir, tarFile string, allRoot bool, uid, gid int64) error {
	if rootdir != "" && tarFile != "" {
		return cli.Usagef("--rootdir and --tar exclude each other")
	}
	o.RootDir = rootdir
	if fim := foreignRoot(rootdir); fim != nil {
		// An ext4, squashfs, ISO 9660 or FAT image (or a partition of
		// a disk, IMAGE@N): its tree comes in as a tar stream.
		pr, pw := io.Pipe()
		go func() {
			// What the stream cannot carry ends the mkfs (an image
			// missing files is no copy), named by its path in IMAGE.
			err := fim.TarOut(pw, "/", foreign.TarOptions{})
			if se := (*foreign.SkipError)(nil); errors.As(err, &se) {
				err = se.Err
			}
			pw.CloseWithError(err)
		}()
		o.RootDir, o.Tar = "", pr
	}
	switch tarFile {
	case "":
	case "-":
		o.Tar = bufio.NewReaderSize(os.Stdin, 1<<20)
	default:
		f, err := os.Open(tarFile)
		if err != nil {
			return err
		}
		o.Tar = f
	}
	if allRoot {
		uid, gid = 0, 0
	}
	for _, v := range []struct {
		id  int64
		dst **uint32
	}{{uid, &o.ForceUID}, {gid, &o.ForceGID}} {
		if v.id > 0xFFFFFFFF {
			return cli.Usagef("owner id %d out of range", v.id)
		}
		if v.id >= 0 {
			id := uint32(v.id)
			*v.dst = &id
		}
	}
	return nil
}

func dataSettings(s *format.Settings, dedupe bool, block, hash, compress string) error {
	s.Dedupe = dedupe
	size, err := units.ParseSize(block)
	if err != nil {
		return cli.Usagef("--dedupe-block: %v", err)
	}
	if s.DedupeBlockLog2, err = mkfs.DedupeBlockLog2(size); err != nil {
		return cli.Usagef("--dedupe-block: %v", err)
	}
	if s.DedupeHash, err = mkfs.ParseDedupeHash(hash); err != nil {
		return cli.Usagef("--dedupe-hash: %v", err)
	}
	if s.Compression, s.CompressionLevel, err = mkfs.ParseCompression(compress); err != nil {
		return cli.Usagef("--compress: %v", err)
	}
	return nil
}

// foreignRoot opens --rootdir when it names no directory but a foreign
// filesystem image (nil otherwise: the directory path reports as before).
func foreignRoot(rootdir string) *foreign.Image {
	if rootdir == "" {
		return nil
	}
	if st, err := os.Stat(rootdir); err == nil && st.IsDir() {
		return nil
	}
	fim, err := foreign.Open(rootdir)
	if err != nil || !fim.Kind().IsFilesystem() {
		return nil
	}
	return fim
}
