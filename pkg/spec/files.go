package spec

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MaxFileSize is the largest spec file (or stdin) Load reads: 16 MiB, far
// above any hand-written spec (5,000 resources are about 1 MiB), and low
// enough that a wrong -f (a disk image, /dev/zero) is an error naming the
// file rather than an out-of-memory crash.
const MaxFileSize = 16 << 20

// expand turns the -f arguments into files: a directory contributes its
// *.yaml and *.yml files (not recursively), sorted. A file named twice is
// read once. Only regular files are read: an entry of a directory that is
// a FIFO, socket or device is reported (never opened: a FIFO would block
// the read forever), not skipped silently, since its documents would then
// be missing from the plan and --prune would remove what they manage.
func (l *loader) expand(paths []string) []string {
	var files []string
	seen := map[string]bool{}
	add := func(f string) {
		if c := filepath.Clean(f); !seen[c] {
			seen[c] = true
			files = append(files, f)
		}
	}
	if len(paths) == 0 {
		l.errorf(Pos{File: "-"}, "no spec files given (use -f PATH)")
	}
	for _, p := range paths {
		if p == StdinPath {
			add(p)
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			l.unreadable = true
			l.errorf(Pos{File: p}, "%s", describeOSError(err))
			continue
		}
		if !fi.IsDir() {
			if l.regular(p, fi) {
				add(p)
			}
			continue
		}
		l.expandDir(p, add)
	}
	return files
}

// expandDir adds the *.yaml and *.yml files of directory dir.
func (l *loader) expandDir(dir string, add func(string)) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		l.unreadable = true
		l.errorf(Pos{File: dir}, "%s", describeOSError(err))
		return
	}
	n := 0
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		n++
		path := filepath.Join(dir, e.Name())
		fi, err := os.Stat(path) // follows a symlink, which ReadDir's type does not
		if err != nil {
			l.unreadable = true
			l.errorf(Pos{File: path}, "%s", describeOSError(err))
			continue
		}
		if fi.IsDir() {
			continue // a directory named x.yaml (or a link to one): not recursed into
		}
		if l.regular(path, fi) {
			add(path)
		}
	}
	if n == 0 {
		l.errorf(Pos{File: dir}, "directory has no *.yaml or *.yml files")
	}
}

// regular reports whether fi is a regular file of at most MaxFileSize,
// reporting it otherwise.
func (l *loader) regular(path string, fi fs.FileInfo) bool {
	if err := checkRegular(fi); err != nil {
		l.unreadable = true
		hint := ""
		if !fi.Mode().IsRegular() {
			hint = " (pipe a spec in with -f -)"
		}
		l.errorf(Pos{File: path}, "%v%s", err, hint)
		return false
	}
	return true
}

// checkRegular refuses what is not a regular file, or is one over the cap.
func checkRegular(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s): pvectl reads regular files only", fileType(fi.Mode()))
	}
	if fi.Size() > MaxFileSize {
		return fmt.Errorf("file is %s, over the %s limit for a spec file: is this the right file? (split a larger spec into several files)", sizeText(fi.Size()), sizeText(MaxFileSize))
	}
	return nil
}

func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	}
	return "not a plain file"
}

func sizeText(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// errTooLarge is a file or stdin that grew past MaxFileSize while read.
var errTooLarge = fmt.Errorf("over the %s limit for a spec file: is this the right file? (split a larger spec into several files)", sizeText(MaxFileSize))

// read returns the content of file (stdinName: LoadOptions.Stdin), at most
// MaxFileSize bytes.
func (l *loader) read(file string) ([]byte, error) {
	if file == stdinName {
		data, err := readCapped(l.stdin)
		l.stdinData = data // a restarted Load reads it again (stream.go)
		return data, err
	}
	data, err := readRegular(file)
	if err != nil {
		// The file is named by the diagnostic's position already.
		return nil, errors.New(describeOSError(err))
	}
	return data, nil
}

// readRegular returns the content of a regular file of at most
// MaxFileSize bytes; its errors name the file. The file is opened without blocking and checked on
// the open descriptor: it may have been swapped for a FIFO since a Stat,
// and it may grow while read.
func readRegular(file string) ([]byte, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|openNonBlock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err == nil {
		err = checkRegular(fi)
	}
	var data []byte
	if err == nil {
		data, err = readCapped(f)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: file, Err: err}
	}
	return data, nil
}

// readCapped reads r to its end, refusing more than MaxFileSize bytes.
func readCapped(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, errTooLarge
	}
	return data, nil
}

// describeOSError is err without the file name, which the diagnostic's
// position gives ("open: permission denied").
func describeOSError(err error) string {
	var pe *os.PathError
	switch {
	case errors.As(err, &pe) && pe.Op == "read":
		return describeOSError(pe.Err)
	case errors.As(err, &pe):
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}
