package format

import iofs "io/fs"

// FSMode converts a Unix mode (InodeItem.Mode, type bits included) to
// an iofs.FileMode, as os.Stat does. Unknown type bits give ModeIrregular.
func FSMode(m uint32) iofs.FileMode {
	mode := iofs.FileMode(m & 0o777)
	switch m & ModeTypeMask {
	case ModeRegular:
	case ModeDir:
		mode |= iofs.ModeDir
	case ModeSymlink:
		mode |= iofs.ModeSymlink
	case ModeCharDev:
		mode |= iofs.ModeDevice | iofs.ModeCharDevice
	case ModeBlockDev:
		mode |= iofs.ModeDevice
	case ModeFIFO:
		mode |= iofs.ModeNamedPipe
	case ModeSocket:
		mode |= iofs.ModeSocket
	default:
		mode |= iofs.ModeIrregular
	}
	if m&0o4000 != 0 {
		mode |= iofs.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= iofs.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= iofs.ModeSticky
	}
	return mode
}
