package provision

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// HashLen is how many hex digits of a file's SHA-256 the block keeps.
const HashLen = 12

// File is one provisioning file, read and hashed.
type File struct {
	// Name is the file as the spec names it: the key of its entry in the
	// provision block, and what progress and errors call it.
	Name string
	// Path is where it is read (the caller resolves Name against the spec
	// file that names it).
	Path string
	// Hash is the first HashLen hex digits of its digest (see the package
	// doc for what the digest covers).
	Hash string
	// digest is the full hex digest; content the hex SHA-256 of the file's
	// bytes alone. A legacy block's hash is compared with both.
	digest, content string
}

// Kind is how a file is run, from its extension.
type Kind int

// The kinds of provisioning file.
const (
	Playbook Kind = iota + 1 // .yaml, .yml: ansible-playbook from here
	Manifest                 // .pp: puppet apply on the guest
)

// KindOf tells how a file name is run; any other extension is an error.
func KindOf(name string) (Kind, error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml":
		return Playbook, nil
	case ".pp":
		return Manifest, nil
	}
	return 0, fmt.Errorf("provision file %s: unknown extension: want .yaml or .yml (ansible-playbook) or .pp (puppet apply)", name)
}

// CheckName is the offline check `validate` runs on each provision entry:
// a known extension, and a name the block can hold (no ',', '=', ']' or
// line break, no surrounding spaces). It does not touch the filesystem.
func CheckName(name string) error {
	if name == "" {
		return errors.New("provision file: empty name")
	}
	if strings.ContainsAny(name, ",=]\n\r") || strings.TrimSpace(name) != name {
		return fmt.Errorf("provision file %q: the name may not contain ',', '=', ']', a line break or surrounding spaces (it is recorded in the VM's description)", name)
	}
	_, err := KindOf(name)
	return err
}

// NewFile reads and hashes the file at path, known to the spec as name.
func NewFile(name, path string) (File, error) {
	if err := CheckName(name); err != nil {
		return File{}, err
	}
	kind, _ := KindOf(name)
	data, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("provision file %s: %w", name, err)
	}
	sum := sha256.Sum256(data)
	f := File{Name: name, Path: path, content: hex.EncodeToString(sum[:])}
	f.digest = f.content
	if kind == Playbook {
		roles := filepath.Join(filepath.Dir(path), "roles")
		if fi, err := os.Stat(roles); err == nil && fi.IsDir() {
			d, err := treeDigest(f.content, roles)
			if err != nil {
				return File{}, fmt.Errorf("provision file %s: hash %s: %w", name, roles, err)
			}
			f.digest = d
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return File{}, fmt.Errorf("provision file %s: %w", name, err)
		}
	}
	f.Hash = f.digest[:HashLen]
	return f, nil
}

// treeDigest covers a playbook and the roles/ directory beside it, so that
// editing a role reruns the playbooks next to it. WalkDir goes in lexical
// order, so the digest does not depend on the filesystem's; each entry is
// written as a quoted path and its type, files with their content's
// SHA-256, symlinks with their target (not followed: a link into /etc must
// not make the hash depend on the machine).
func treeDigest(fileSum, root string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "pvectl-provision-v1\nfile %s\n", fileSum)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = strconv.Quote(filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			fmt.Fprintf(h, "dir %s\n", rel)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "link %s %s\n", rel, strconv.Quote(target))
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			fmt.Fprintf(h, "file %s %x\n", rel, sum)
		default:
			fmt.Fprintf(h, "other %s\n", rel)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// matches reports whether a recorded hash is this file's. A legacy entry
// may be a prefix of any length of either digest (the old tool hashed the
// bytes alone).
func (f File) matches(recorded string, legacy bool) bool {
	if !legacy {
		return recorded == f.Hash
	}
	return strings.HasPrefix(f.digest, recorded) || strings.HasPrefix(f.content, recorded)
}
