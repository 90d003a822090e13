package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/mkfs"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/units"
)

// resolveDevice turns DEVID|PATH into a devid of the set: a number, or a
// path that is the same file as an open member or equal to a device
// item's path hint.
func resolveDevice(fs *store.FS, arg string) (uint64, error) {
	if id, err := strconv.ParseUint(arg, 10, 64); err == nil {
		return id, nil
	}
	st, statErr := os.Stat(arg)
	for _, d := range fs.Vol.Devices() {
		if d.Path == arg {
			return d.ID, nil // a network device has no file to compare
		}
		if dst, err := os.Stat(d.Path); statErr == nil && err == nil && os.SameFile(st, dst) {
			return d.ID, nil
		}
	}
	for _, d := range fs.DevItems() {
		hint := d.Path
		if p, ok := fs.Vol.HintPath(hint); ok {
			hint = p
		}
		if hint != "" && filepath.Clean(hint) == filepath.Clean(arg) {
			return d.DevID, nil
		}
	}
	return 0, fmt.Errorf("%s: %w", arg, store.ErrNoDevice)
}

// devicePath names a device for messages: its open path, else its hint,
// else "missing" (a member gone with no path recorded).
func devicePath(fs *store.FS, id uint64) string {
	if d, ok := fs.Vol.Device(id); ok {
		return d.Path
	}
	for _, d := range fs.DevItems() {
		if d.DevID == id && d.Path != "" {
			return d.Path
		}
		if d.DevID == id {
			return "missing"
		}
	}
	return "?"
}

// relocProgress draws "chunks relocated N/M" on a terminal stderr.
func relocProgress() store.Progress {
	if !isTerminal(os.Stderr) {
		return nil
	}
	return func(done, total int) {
		fmt.Fprintf(os.Stderr, "\rrelocated %d/%d chunks ", done, total)
		if done == total {
			fmt.Fprintln(os.Stderr)
		}
	}
}

// closeStats closes a filesystem a device command worked on and prints
// --stats for the devices that are members at the end.
func (o *openFlags) closeStats(fs *store.FS) {
	devs, items := fs.Vol.Devices(), fs.DevItems()
	fs.Close()
	printStats(o.stats, inspect.DevicesIO(devs, items), fs.FallbackChunks(), fs.Super().Settings.AllocPolicy.String(), fs.HealStats())
}

// openDevice opens image for writing and resolves DEVID|PATH in it.
func openDevice(of *openFlags, image, which string) (*store.FS, uint64, error) {
	fs, err := of.open(image, true)
	if err != nil {
		return nil, 0, err
	}
	id, err := resolveDevice(fs, which)
	if err != nil {
		fs.Close()
		return nil, 0, fmt.Errorf("%s: %w", image, err)
	}
	return fs, id, nil
}

// reportReloc says on stderr when relocation met blocks that failed their
// checksum on the copy it read (taken from another copy) or on every copy
// (copied as read: fsck and scrub report them).
// where is the message's "CMD: IMAGE" part.
func reportReloc(w io.Writer, where string, fs *store.FS) {
	st := fs.RelocStats()
	if st.Repaired > 0 {
		fmt.Fprintf(w, "ddfs: %s: %d blocks failed their checksum on the copy read and were taken from another copy\n", where, st.Repaired)
	}
	if st.Unrecovered > 0 {
		fmt.Fprintf(w, "ddfs: %s: warning: %d blocks verify on no copy; copied as read (see fsck.ddfs --check-data)\n", where, st.Unrecovered)
	}
}

// deviceRemove is `ddfs device remove IMAGE DEVID|PATH`.
func deviceRemove(of *openFlags, image, which string, stdout, stderr io.Writer) error {
	fs, id, err := openDevice(of, image, which)
	if err != nil {
		return err
	}
	defer of.closeStats(fs)
	path := devicePath(fs, id)
	err = fs.RemoveDevice(id, relocProgress())
	reportReloc(stderr, "device: "+image, fs)
	if err != nil {
		return fmt.Errorf("%s: remove device %d (%s): %w", image, id, path, err)
	}
	fmt.Fprintf(stdout, "removed device %d (%s)\n", id, path)
	return nil
}

// deviceReplace is `ddfs device replace IMAGE OLD NEWPATH[:props]`; a new
// image file is created sparse, as large as OLD unless -b says otherwise.
func deviceReplace(of *openFlags, image, old, newSpec string, size uint64, force bool, stdout, stderr io.Writer) error {
	spec, err := mkfs.ParseDeviceSpec(newSpec)
	if err != nil {
		return usageErr("%v", err)
	}
	fs, id, err := openDevice(of, image, old)
	if err != nil {
		return err
	}
	defer of.closeStats(fs)
	if nid, err := resolveDevice(fs, spec.Path); err == nil {
		if nid == id {
			return fmt.Errorf("%s: %s is device %d itself", image, spec.Path, id)
		}
		// NEW already a member: a replace that stopped after NEW joined.
		return finishReplace(fs, image, id, nid, stdout, stderr)
	}
	if size == 0 {
		for _, d := range fs.DevItems() {
			if d.DevID == id {
				size = d.TotalBytes
			}
		}
	}
	oldPath := devicePath(fs, id)
	nd, isNew, err := mkfs.PrepareDevice(spec, size, force, filepath.Dir(image))
	if err != nil {
		return err
	}
	newID, err := fs.ReplaceDevice(id, nd, relocProgress())
	reportReloc(stderr, "device: "+image, fs)
	if err != nil && newID == 0 {
		// Refused before NEW joined the set: leave no file behind.
		nd.Dev.Close()
		if isNew {
			os.Remove(spec.Path)
		}
	}
	if err != nil {
		return fmt.Errorf("%s: replace device %d (%s): %w", image, id, oldPath, err)
	}
	fmt.Fprintf(stdout, "replaced device %d (%s) with device %d (%s)\n", id, oldPath, newID, spec.Path)
	nextStep(stdout, fs, image)
	return nil
}

// nextStep says what is left after a replace: the members still missing
// (their chunks stay degraded until each is replaced; balance could not
// meet the profiles without them yet), else the chunks written degraded
// that balance converts.
func nextStep(w io.Writer, fs *store.FS, image string) {
	gone := false
	for _, d := range fs.DevItems() {
		if fs.Vol.IsMissing(d.DevID) {
			fmt.Fprintf(w, "device %d is still missing; its copies come back when it is replaced too: ddfs device replace --degraded %s %d NEWPATH\n", d.DevID, image, d.DevID)
			gone = true
		}
	}
	if n, dp, mp := fs.BelowProfile(); n > 0 && !gone {
		fmt.Fprintf(w, "%d chunks written degraded are below the set's profiles; convert them: ddfs balance -d %v -m %v %s\n", n, dp, mp, image)
	}
}

// finishReplace completes an interrupted replace of device id by nid.
func finishReplace(fs *store.FS, image string, id, nid uint64, stdout, stderr io.Writer) error {
	oldPath, newPath := devicePath(fs, id), devicePath(fs, nid)
	err := fs.FinishReplace(id, nid, relocProgress())
	reportReloc(stderr, "device: "+image, fs)
	if err != nil {
		return fmt.Errorf("%s: replace device %d (%s): %w", image, id, oldPath, err)
	}
	fmt.Fprintf(stdout, "replaced device %d (%s) with device %d (%s)\n", id, oldPath, nid, newPath)
	nextStep(stdout, fs, image)
	return nil
}

// deviceResize is `ddfs device resize IMAGE DEVID SIZE|max`.
func deviceResize(of *openFlags, image, which, sizeArg string, stdout, stderr io.Writer) error {
	var size uint64
	if sizeArg != "max" {
		var err error
		if size, err = units.ParseSize(sizeArg); err != nil {
			return usageErr("%v", err) // it names the size
		}
		if size < mkfs.MinDeviceSize {
			return usageErr("size %s: at least %d MiB", sizeArg, mkfs.MinDeviceSize>>20)
		}
	}
	fs, id, err := openDevice(of, image, which)
	if err != nil {
		return err
	}
	defer of.closeStats(fs)
	d, ok := fs.Vol.Device(id)
	if !ok {
		return fmt.Errorf("%s: device %d: %w", image, id, store.ErrNoDevice)
	}
	if sizeArg == "max" {
		size = uint64(d.Dev.Size())
	}
	err = fs.ResizeDevice(id, size, relocProgress())
	reportReloc(stderr, "device: "+image, fs)
	if err != nil {
		return fmt.Errorf("%s: resize device %d (%s): %w", image, id, d.Path, err)
	}
	for _, it := range fs.DevItems() {
		if it.DevID == id {
			fmt.Fprintf(stdout, "device %d (%s): %s\n", id, d.Path, units.Human(it.TotalBytes))
		}
	}
	return nil
}
