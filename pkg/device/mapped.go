package device

import "errors"

// Mapper is implemented by devices that can tell which of their bytes the
// storage still backs: an image file's data, not its holes. Trim reports
// with it how much free space a discard would still give back.
type Mapper interface {
	// Mapped is the bytes of [off, off+n) the storage holds.
	Mapped(off, n int64) (int64, error)
}

// MappedOf is d's Mapped, looking through wrappers; ok is false when no
// layer can tell (block devices, NBD exports).
func MappedOf(d Device, off, n int64) (m int64, ok bool, err error) {
	for d != nil {
		if mp, is := d.(Mapper); is {
			m, err = mp.Mapped(off, n)
			if errors.Is(err, ErrNotSupported) {
				return 0, false, nil
			}
			return m, err == nil, err
		}
		u, is := d.(Unwrapper)
		if !is {
			break
		}
		d = u.Unwrap()
	}
	return 0, false, nil
}

func (d *fileDevice) Mapped(off, n int64) (int64, error) {
	if err := checkRange("map", d.name, off, n, d.size); err != nil {
		return 0, err
	}
	return mappedBytes(d.f, off, n)
}

func (p *partDevice) Mapped(off, n int64) (int64, error) {
	if err := checkRange("map", p.name, off, n, p.size); err != nil {
		return 0, err
	}
	return p.dev.Mapped(p.off+off, n)
}
