package transfer

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// ErrNotTar: the input is empty or its first header is not a tar header
// (GNU tar's words).
var ErrNotTar = errors.New("This does not look like a tar archive")

// zstdMaxWindow bounds the memory a hostile zstd frame can make the
// decoder take (zstd -19 uses 8 MiB; --long=27 128 MiB).
const zstdMaxWindow = 128 << 20

// decompressed returns r, or a reader of its decompressed bytes when it
// starts with the magic of gzip, zstd, xz or bzip2 (as GNU tar -x guesses
// from the content, not the name). done frees the decoder. Empty input is
// ErrNotTar.
func decompressed(r io.Reader) (_ io.Reader, done func(), _ error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 1<<20)
	}
	magic, err := br.Peek(blockSize)
	if len(magic) == 0 {
		if err == io.EOF {
			return nil, nil, ErrNotTar
		}
		return nil, nil, fmt.Errorf("read archive: %w", err)
	}
	nop := func() {}
	switch {
	case len(magic) >= 262 && string(magic[257:262]) == "ustar":
		// a tar header (whatever its first name's bytes)
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		return z, func() { z.Close() }, nil
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		z, err := zstd.NewReader(br, zstd.WithDecoderMaxWindow(zstdMaxWindow), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, nil, fmt.Errorf("zstd: %w", err)
		}
		return z, z.Close, nil
	case bytes.HasPrefix(magic, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		z, err := xz.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("xz: %w", err)
		}
		return z, nop, nil
	case bytes.HasPrefix(magic, []byte("BZh")) && len(magic) >= 4 && magic[3] >= '1' && magic[3] <= '9':
		return bzip2.NewReader(br), nop, nil
	}
	return br, nop, nil
}
