package device

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/diskfs/go-diskfs/partition/gpt"
	"github.com/diskfs/go-diskfs/partition/mbr"
)

const partImageSize = 8 << 20

// makePartitioned writes an image with partition 1 at 1 MiB (1 MiB long)
// and partition 2 at 2 MiB (2 MiB long) using go-diskfs.
func makePartitioned(t *testing.T, kind string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), kind+".img")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(partImageSize); err != nil {
		t.Fatal(err)
	}
	switch kind {
	case "gpt":
		tbl := &gpt.Table{
			LogicalSectorSize:  512,
			PhysicalSectorSize: 512,
			ProtectiveMBR:      true,
			Partitions: []*gpt.Partition{
				{Index: 1, Start: 2048, End: 4095, Type: gpt.LinuxFilesystem, Name: "one"},
				{Index: 2, Start: 4096, End: 8191, Type: gpt.LinuxFilesystem, Name: "two"},
			},
		}
		err = tbl.Write(f, partImageSize)
	case "mbr":
		tbl := &mbr.Table{
			LogicalSectorSize:  512,
			PhysicalSectorSize: 512,
			Partitions: []*mbr.Partition{
				{Type: mbr.Linux, Start: 2048, Size: 2048},
				{Type: mbr.Linux, Start: 4096, Size: 4096},
			},
		}
		err = tbl.Write(f, partImageSize)
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPartition(t *testing.T) {
	for _, kind := range []string{"gpt", "mbr"} {
		t.Run(kind, func(t *testing.T) {
			path := makePartitioned(t, kind)
			d, err := Open(path+"@2", OpenOptions{Mode: ReadWrite})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if d.Size() != 2<<20 {
				t.Fatalf("Size = %d, want %d", d.Size(), 2<<20)
			}
			if d.Name() != path+"@2" {
				t.Fatalf("Name = %q", d.Name())
			}
			data := pattern(8192, 77)
			const off = 12345
			if _, err := d.WriteAt(data, off); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(data))
			if _, err := d.ReadAt(got, off); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("ReadAt: %v, equal %v", err, bytes.Equal(got, data))
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}

			// The bytes sit at the partition's absolute offset in the image.
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if abs := int64(2<<20) + off; !bytes.Equal(raw[abs:abs+int64(len(data))], data) {
				t.Fatal("data not at partition offset in the image")
			}

			bad := []struct {
				off int64
				n   int
			}{
				{2<<20 - 100, 200}, // straddles the end
				{2 << 20, 1},       // just past it (partition 3 area)
				{-1, 1},
			}
			for _, b := range bad {
				if n, err := d.WriteAt(make([]byte, b.n), b.off); !errors.Is(err, ErrOutOfRange) || n != 0 {
					t.Errorf("WriteAt(%d bytes at %d) = %d, %v; want 0, ErrOutOfRange", b.n, b.off, n, err)
				}
			}
			if err := d.Discard(2<<20-4096, 8192); !errors.Is(err, ErrOutOfRange) {
				t.Errorf("Discard past end: %v, want ErrOutOfRange", err)
			}
			if n, err := d.ReadAt(make([]byte, 200), 2<<20-100); n != 100 || err != io.EOF {
				t.Errorf("ReadAt across end = %d, %v; want 100, EOF", n, err)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(raw[4<<20:], after[4<<20:]) {
				t.Error("refused writes changed bytes after the partition")
			}
		})
	}
}

func TestPartitionMissing(t *testing.T) {
	path := makePartitioned(t, "gpt")
	_, err := Open(path+"@3", OpenOptions{Mode: ReadOnly})
	if want := fmt.Sprintf("%s: no partition 3 (table has 2)", path); err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}

	plain := newImage(t, 1<<20)
	if _, err := Open(plain+"@1", OpenOptions{Mode: ReadOnly}); err == nil {
		t.Fatal("opened a partition of an unpartitioned image")
	}
}

func TestPartitionLocks(t *testing.T) {
	path := makePartitioned(t, "gpt")
	p1, err := Open(path+"@1", OpenOptions{Mode: ReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer p1.Close()
	// Different partitions of one image do not conflict...
	p2, err := Open(path+"@2", OpenOptions{Mode: ReadWrite})
	if err != nil {
		t.Fatalf("second partition: %v", err)
	}
	defer p2.Close()
	// ...but the same partition and the whole image do.
	for _, spec := range []string{path + "@2", path} {
		d, err := Open(spec, OpenOptions{Mode: ReadOnly})
		if err == nil {
			d.Close()
			t.Fatalf("%s opened while partitions are written", spec)
		}
		if want := spec + " is in use by this process"; !errors.Is(err, ErrBusy) || err.Error() != want {
			t.Fatalf("err = %q, want %q", err, want)
		}
	}
}

// TestReaderMarksPerWindow: readers beside the writers of two partitions
// of one image each mark their own window: a writer sees its window's
// readers only (a writer of partition 2 held back by a reader of
// partition 1 would keep freed space for nothing; the reverse would reuse
// space a reader still reads), a new mark replaces the old, and a
// closed reader's mark is gone.
func TestReaderMarksPerWindow(t *testing.T) {
	path := makePartitioned(t, "gpt")
	open := func(n int, o OpenOptions) ReaderMarks {
		t.Helper()
		d, err := Open(fmt.Sprintf("%s@%d", path, n), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		m, ok := d.(ReaderMarks)
		if !ok {
			t.Fatalf("partition %d carries no reader marks", n)
		}
		return m
	}
	w1, w2 := open(1, OpenOptions{Mode: ReadWrite}), open(2, OpenOptions{Mode: ReadWrite})
	r1, r2 := open(1, OpenOptions{Beside: true}), open(2, OpenOptions{Beside: true})
	if !r1.Beside() || !r2.Beside() || w1.Beside() {
		t.Fatalf("beside: r1 %v r2 %v w1 %v", r1.Beside(), r2.Beside(), w1.Beside())
	}
	oldest := func(w ReaderMarks, want uint64, found bool) {
		t.Helper()
		gen, _, ok, err := w.OldestReader() // no PID: our own POSIX mirror locks never conflict with us
		if err != nil || ok != found || ok && gen != want {
			t.Fatalf("oldest reader %d (found %v, %v), want %d (found %v)", gen, ok, err, want, found)
		}
	}
	if err := r1.MarkReader(5); err != nil {
		t.Fatal(err)
	}
	if err := r2.MarkReader(9); err != nil {
		t.Fatal(err)
	}
	oldest(w1, 5, true)
	oldest(w2, 9, true)
	if err := r1.MarkReader(7); err != nil {
		t.Fatal(err)
	}
	oldest(w1, 7, true)
	r1.(Device).Close()
	oldest(w1, 0, false)
	oldest(w2, 9, true)
}
