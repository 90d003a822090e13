// Package attrspec parses the attribute specifications users type, as
// GNU coreutils reads them: chmod modes (octal and symbolic), chown
// owners (names from a passwd/group file or numbers) and touch dates.
// It knows nothing of images: callers hand it the file contents.
package attrspec
