package corpus

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/volume"
)

// Golden is what fsck finds in a damaged image: the codes of the problems
// (sorted, warnings marked "~") before repair, after -p and after -y.
type Golden struct {
	Before, AfterPreen, AfterRepair []string
}

// Codes lists the problem codes of a report that are not fixed.
func Codes(rep *check.Report) []string {
	out := []string{}
	for _, p := range rep.Problems {
		if p.Fixed {
			continue
		}
		c := string(p.Code)
		if p.Warning {
			c = "~" + c
		}
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// Measure runs fsck on copies of devs: a check, a -p repair, a -y
// repair (each on its own copy).
func Measure(devs []*device.MemDevice) (Golden, error) {
	var g Golden
	rep, err := Run(devs, check.ModeCheck)
	if err != nil {
		return g, err
	}
	g.Before = Codes(rep)
	if rep, err = Run(devs, check.ModePreen); err != nil {
		return g, err
	}
	g.AfterPreen = Codes(rep)
	if rep, err = Run(devs, check.ModeRepair); err != nil {
		return g, err
	}
	g.AfterRepair = Codes(rep)
	return g, nil
}

// Run checks (and repairs, per mode) a copy of devs, always reading data.
func Run(devs []*device.MemDevice, mode check.Mode) (*check.Report, error) {
	work := make([]device.Device, len(devs))
	for i, d := range devs {
		work[i] = d.Snapshot()
	}
	open := func() (*volume.Volume, error) { return volume.FromDevices(work, mode != check.ModeCheck) }
	if mode == check.ModeCheck {
		vol, err := open()
		if err != nil {
			return nil, err
		}
		return check.CheckVolume(vol, check.Options{CheckData: true})
	}
	return check.Repair(open, check.Options{Mode: mode, CheckData: true})
}

// Format renders a golden file.
func (g Golden) Format(k Kind) string {
	return fmt.Sprintf("# %s: %s damage; written by go run ./testimages/damaged/gen, checked by make test\nbefore: %s\nafter -p: %s\nafter -y: %s\n",
		k.Name, k.What, strings.Join(g.Before, " "), strings.Join(g.AfterPreen, " "), strings.Join(g.AfterRepair, " "))
}

// ParseGolden reads a golden file.
func ParseGolden(r io.Reader) (Golden, error) {
	var g Golden
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			return g, fmt.Errorf("bad golden line %q", line)
		}
		codes := strings.Fields(val)
		if codes == nil {
			codes = []string{}
		}
		switch key {
		case "before":
			g.Before = codes
		case "after -p":
			g.AfterPreen = codes
		case "after -y":
			g.AfterRepair = codes
		default:
			return g, fmt.Errorf("bad golden key %q", key)
		}
	}
	return g, sc.Err()
}

// WriteImages writes each device of a kind as NAME.N.img.gz in dir.
func WriteImages(dir string, devs []*device.MemDevice) error {
	for _, d := range devs {
		f, err := os.Create(filepath.Join(dir, d.Name()+".gz"))
		if err != nil {
			return err
		}
		zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
		_, err = io.Copy(zw, io.NewSectionReader(d, 0, d.Size()))
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// maxImage bounds an unpacked image (a corrupt or hostile .gz must not
// fill memory).
const maxImage = 256 << 20

// ReadImages reads the devices NAME.1.img.gz ... of a kind from dir.
func ReadImages(dir, name string) ([]*device.MemDevice, error) {
	var devs []*device.MemDevice
	for i := 1; ; i++ {
		p := filepath.Join(dir, fmt.Sprintf("%s.%d.img.gz", name, i))
		f, err := os.Open(p)
		if os.IsNotExist(err) && i > 1 {
			return devs, nil
		}
		if err != nil {
			return nil, err
		}
		b, err := gunzip(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		d := device.NewMemDevice(fmt.Sprintf("%s.%d.img", name, i), int64(len(b)))
		if _, err := d.WriteAt(b, 0); err != nil {
			return nil, err
		}
		d.Flush()
		devs = append(devs, d)
	}
}

func gunzip(r io.Reader) ([]byte, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(zr, maxImage+1))
	if err == nil && len(b) > maxImage {
		err = fmt.Errorf("image larger than %d bytes", maxImage)
	}
	return b, err
}
