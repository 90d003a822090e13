package cli

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"strings"
)

// NameImage puts the image in front of an error opening it that does not
// name it first ("a.img: device 2 (...) not found"), as the error lines
// of the commands that got past the open do. A path error is left alone:
// the error line names its file already.
func NameImage(image string, err error) error {
	var pe *iofs.PathError
	if strings.HasPrefix(err.Error(), image) || errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("%s: %w", image, err)
}
