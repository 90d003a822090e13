package main

import (
	"errors"
	"io/fs"
	"path"
	"sort"
	"strings"
	"syscall"

	"github.com/ddfs/ddfs/pkg/fsys"
)

// expandPaths expands the glob patterns among image paths (absolute, as
// imageOperands returns them) inside the image, as scp and mcopy do for a
// quoted 'IMG:/dir/*.go': the shell does not see the image, so ddfs does.
//
// A path is a pattern when it contains '*', '?' or '['; other paths are
// returned unchanged (missing ones are the command's to report). Each
// element of a pattern is matched with path.Match against the entries of
// the directories matched so far ('\' escapes a metacharacter); an entry
// starting with '.' matches only an element starting with '.'. Each
// pattern's matches are sorted. A pattern matching nothing is the path
// itself when that exists (a file named "a[1]"), else an error naming it
// (fs.ErrNotExist: "IMG:/x/*.go: No such file or directory"); so is one
// that is no valid pattern ("x[").
//
// Entries fsck flags (fsys.Refused) are never matched or walked into: with
// bad set they are noted there and expansion goes on (the caller fails at
// the end, as ls -R does); with bad nil the first is returned as the error.
// Other errors (an unreadable directory) are returned, never taken for
// "no match".
func expandPaths(im *image, paths []string, bad *fsys.Refused) ([]string, error) {
	var own fsys.Refused
	if bad == nil {
		bad = &own
	}
	var out []string
	for _, p := range paths {
		if !strings.ContainsAny(p, "*?[") {
			out = append(out, p)
			continue
		}
		ms, err := globOne(im.f, p, bad)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	if bad == &own {
		if err := own.Done(nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// globOne expands one pattern.
func globOne(f *fsys.FS, pattern string, bad *fsys.Refused) ([]string, error) {
	found := []string{"/"}
	for _, elem := range strings.Split(pattern, "/") {
		if elem == "" {
			continue
		}
		var next []string
		for _, dir := range found {
			ms, err := matchIn(f, dir, elem, bad)
			if errors.Is(err, path.ErrBadPattern) {
				if _, rerr := f.Resolve(pattern, false); rerr == nil {
					return []string{pattern}, nil // a name, not a pattern ("x[\")
				}
			}
			if err != nil {
				return nil, err
			}
			next = append(next, ms...)
		}
		if found = next; len(found) == 0 {
			break
		}
	}
	// Literal elements after a pattern were joined unchecked.
	found, err := existing(f, found)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		if _, err := f.Resolve(pattern, false); err == nil {
			return []string{pattern}, nil
		}
		if err := bad.Done(nil); err != nil {
			return nil, err // a refused entry may be why nothing matched
		}
		return nil, &fs.PathError{Op: "glob", Path: pattern, Err: syscall.ENOENT}
	}
	sort.Strings(found)
	return found, nil
}

// existing keeps the paths that name an entry.
func existing(f *fsys.FS, ps []string) ([]string, error) {
	out := ps[:0]
	for _, p := range ps {
		_, err := f.Resolve(p, false)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// matchIn returns dir/NAME for the entries of dir matching elem. A dir
// that is missing or not a directory matches nothing.
func matchIn(f *fsys.FS, dir, elem string, bad *fsys.Refused) ([]string, error) {
	if !strings.ContainsAny(elem, "*?[") {
		// A literal element (escapes removed) needs no listing.
		return []string{path.Join(dir, unescape(elem))}, nil
	}
	elem = negation(elem)
	if _, err := path.Match(elem, ""); err != nil {
		return nil, &fs.PathError{Op: "glob", Path: elem, Err: err}
	}
	in, err := f.Resolve(dir, true)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || err == nil && !in.IsDir() {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	kids, err := f.Children(in)
	if err := bad.Note(dir, err); err != nil {
		return nil, err
	}
	var out []string
	for _, k := range kids {
		name := k.Entry.Name
		if strings.HasPrefix(name, ".") && !strings.HasPrefix(elem, ".") {
			continue
		}
		if ok, _ := path.Match(elem, name); ok {
			out = append(out, path.Join(dir, name))
		}
	}
	return out, nil
}

// negation turns the shell's "[!...]" into path.Match's "[^...]".
func negation(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '\\':
			i++
		case b[i] == '[' && i+1 < len(b) && b[i+1] == '!':
			b[i+1] = '^'
		}
	}
	return string(b)
}

// unescape removes the backslashes of a pattern element without
// metacharacters ("a\ b" is "a b").
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
