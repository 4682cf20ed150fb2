package iso9660

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// File is one regular file of a Volume.
type File struct {
	// Path is slash-separated and relative ("openstack/latest/user_data");
	// directories are implied. Each component is 1 to 64 characters of
	// A-Z a-z 0-9 . _ - and the tree is at most 8 levels deep.
	Path string
	Data []byte
}

// Volume is what Write turns into an image.
type Volume struct {
	// Label is the volume identifier (1 to 16 characters of A-Z a-z 0-9 .
	// _ -), written as given to the primary and the Joliet descriptor, as
	// genisoimage -V does: cloud-init finds its seeds by this label.
	Label string
	// Files in any order: the image is the same for every order.
	Files []File
	// ModTime is every timestamp of the image; the zero value means Epoch.
	ModTime time.Time
}

// Epoch is the timestamp of images whose Volume has no ModTime: a fixed
// instant (1980-01-01 UTC), so that images do not depend on when they were
// built.
func Epoch() time.Time { return time.Date(1980, time.January, 1, 0, 0, 0, 0, time.UTC) }

// paddingSectors: genisoimage and xorriso append 300 KiB of zeros by
// default, because Linux reads ahead past the last file of a CD; so does
// this writer.
const paddingSectors = 150

// Bytes returns the image of v.
func Bytes(v Volume) ([]byte, error) {
	var buf bytes.Buffer
	if err := Write(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write writes the image of v to w.
func Write(w io.Writer, v Volume) error {
	l, err := plan(v)
	if err != nil {
		return err
	}
	return l.write(w)
}

type node struct {
	name     string // the real name: Rock Ridge NM and Joliet identifier
	path     string
	dir      bool
	parent   *node
	children []*node // sorted by name
	data     []byte
	primary  primaryID
	lba      uint32 // a file's data extent
}

func (n *node) subdirs() int {
	c := 0
	for _, k := range n.children {
		if k.dir {
			c++
		}
	}
	return c
}

// directory is one directory's extent in one of the two trees.
type directory struct {
	node     *node
	number   uint16 // its number in the path table; the root is 1
	parent   *directory
	children []*node // in this tree's record order
	lba      uint32
	size     uint32 // bytes, whole sectors
}

// tree is the primary (Rock Ridge) or the Joliet directory hierarchy: both
// describe the same nodes and share their file data, but names, record
// order and so directory numbers differ.
type tree struct {
	joliet    bool
	dirs      []*directory // path table order
	byNode    map[*node]*directory
	tableSize uint32 // path table length in bytes
	lTable    uint32 // first sector of the L (little-endian) path table
	mTable    uint32
}

type layout struct {
	label   string
	mtime   time.Time
	root    *node
	files   []*node // data order: sorted by path
	primary *tree
	joliet  *tree
	ceLBA   uint32 // the continuation area holding the ER entry
	sectors uint32 // volume space size
}

func plan(v Volume) (*layout, error) {
	if err := validLabel(v.Label); err != nil {
		return nil, err
	}
	root, files, err := buildTree(v.Files)
	if err != nil {
		return nil, err
	}
	l := &layout{label: v.Label, mtime: v.ModTime, root: root, files: files}
	if l.mtime.IsZero() {
		l.mtime = Epoch()
	}
	if y := l.mtime.UTC().Year(); y < 1900 || y > 2155 {
		return nil, fmt.Errorf("timestamp %s is outside the years ISO 9660 can record", l.mtime)
	}
	l.primary = newTree(root, false)
	l.joliet = newTree(root, true)

	next := uint32(19) // 16 system area sectors, then PVD, Joliet SVD, terminator
	for _, t := range []*tree{l.primary, l.joliet} {
		n := sectorsFor(uint64(t.tableSize))
		t.lTable, next = next, next+n
		t.mTable, next = next, next+n
	}
	l.ceLBA, next = next, next+1
	for _, t := range []*tree{l.primary, l.joliet} {
		for _, d := range t.dirs {
			d.size = l.extentSize(t, d)
			d.lba, next = next, next+d.size/sectorSize
		}
	}
	for _, f := range files {
		// An empty file takes no sector; like genisoimage it points where
		// the next data would start, which the padding keeps inside the
		// volume.
		f.lba = next
		n := sectorsFor(uint64(len(f.data)))
		if uint64(next)+uint64(n)+paddingSectors > math.MaxUint32 {
			return nil, fmt.Errorf("image larger than ISO 9660 can address")
		}
		next += n
	}
	l.sectors = next + paddingSectors
	return l, nil
}

func sectorsFor(n uint64) uint32 {
	return uint32((n + sectorSize - 1) / sectorSize)
}

func buildTree(files []File) (*node, []*node, error) {
	root := &node{dir: true}
	byPath := map[string]*node{"": root}
	var out []*node
	for _, f := range files {
		if len(f.Path) > maxPathLen {
			return nil, nil, fmt.Errorf("path %q is longer than %d bytes", f.Path, maxPathLen)
		}
		if uint64(len(f.Data)) > math.MaxUint32 {
			return nil, nil, fmt.Errorf("file %q is larger than 4 GiB", f.Path)
		}
		parts := strings.Split(f.Path, "/")
		if len(parts) > maxDepth {
			return nil, nil, fmt.Errorf("path %q is deeper than %d levels", f.Path, maxDepth)
		}
		parent := root
		for i, name := range parts {
			if err := validName(name); err != nil {
				return nil, nil, fmt.Errorf("path %q: %w", f.Path, err)
			}
			p := strings.Join(parts[:i+1], "/")
			last := i == len(parts)-1
			if n, ok := byPath[p]; ok {
				if last {
					if n.dir {
						return nil, nil, fmt.Errorf("path %q is both a file and a directory", f.Path)
					}
					return nil, nil, fmt.Errorf("file %q is given twice", f.Path)
				}
				if !n.dir {
					return nil, nil, fmt.Errorf("path %q is both a file and a directory", p)
				}
				parent = n
				continue
			}
			n := &node{name: name, path: p, dir: !last, parent: parent}
			if last {
				n.data = f.Data
				out = append(out, n)
			}
			parent.children = append(parent.children, n)
			byPath[p] = n
			parent = n
		}
	}
	var walk func(*node) error
	walk = func(n *node) error {
		slices.SortFunc(n.children, func(a, b *node) int { return strings.Compare(a.name, b.name) })
		if err := uniquePrimary(n.children); err != nil {
			return fmt.Errorf("directory %q: %w", "/"+n.path, err)
		}
		for _, c := range n.children {
			if c.dir {
				if err := walk(c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(root); err != nil {
		return nil, nil, err
	}
	slices.SortFunc(out, func(a, b *node) int { return strings.Compare(a.path, b.path) })
	return root, out, nil
}

// newTree numbers the directories breadth first with each directory's
// subdirectories in record order, which is the path table order of
// ECMA-119 9.4.3 (by level, then parent number, then identifier).
func newTree(root *node, joliet bool) *tree {
	t := &tree{joliet: joliet, byNode: map[*node]*directory{}}
	cmp := comparePrimary
	if joliet {
		cmp = compareJoliet
	}
	queue := []*directory{{node: root}}
	queue[0].parent = queue[0]
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		d.number = uint16(len(t.dirs) + 1)
		t.dirs = append(t.dirs, d)
		t.byNode[d.node] = d
		d.children = slices.Clone(d.node.children)
		slices.SortStableFunc(d.children, cmp)
		for _, c := range d.children {
			if c.dir {
				queue = append(queue, &directory{node: c, parent: d})
			}
		}
	}
	for _, d := range t.dirs {
		id := t.pathID(d)
		t.tableSize += uint32(8 + len(id) + len(id)%2)
	}
	return t
}

func (t *tree) pathID(d *directory) []byte {
	switch {
	case d.node.parent == nil:
		return []byte{0}
	case t.joliet:
		return ucs2(d.node.name)
	default:
		return []byte(d.node.primary.String())
	}
}

// records lists a directory's records: ".", "..", then its children.
// Lengths never depend on extents, so plan can size a directory before
// the extents are known.
func (l *layout) records(t *tree, d *directory) []record {
	self := record{id: []byte{0}, lba: d.lba, size: d.size, dir: true}
	up := record{id: []byte{1}, lba: d.parent.lba, size: d.parent.size, dir: true}
	if !t.joliet {
		self.su = l.rock(d.node, false, d.node.parent == nil)
		up.su = l.rock(d.parent.node, false, false)
	}
	recs := []record{self, up}
	for _, c := range d.children {
		r := record{dir: c.dir}
		if c.dir {
			sub := t.byNode[c]
			r.lba, r.size = sub.lba, sub.size
		} else {
			r.lba, r.size = c.lba, uint32(len(c.data))
		}
		if t.joliet {
			r.id = ucs2(c.name)
		} else {
			r.id = []byte(c.primary.String())
			r.su = l.rock(c, true, false)
		}
		recs = append(recs, r)
	}
	return recs
}

// rock is the Rock Ridge system use area of a record describing n: with
// its name unless the record is "." or "..", and with SP and the CE
// pointing at the ER entry for the root's own "." record.
func (l *layout) rock(n *node, named, rootSelf bool) []byte {
	var su []byte
	if rootSelf {
		su = append(su, suspSP()...)
	}
	if named {
		su = append(su, rockRR(rrPX|rrTF|rrNM)...)
		su = append(su, rockNM(n.name)...)
	} else {
		su = append(su, rockRR(rrPX|rrTF)...)
	}
	if n.dir {
		su = append(su, rockPX(modeDir, uint32(2+n.subdirs()))...)
	} else {
		su = append(su, rockPX(modeFile, 1)...)
	}
	su = append(su, rockTF(l.mtime)...)
	if rootSelf {
		su = append(su, suspCE(l.ceLBA, 0, uint32(len(suspER())))...)
	}
	return su
}

// extent packs records into sectors; a record never crosses a sector
// boundary (ECMA-119 6.8.1.1).
func (l *layout) extent(t *tree, d *directory) []byte {
	var b []byte
	for _, r := range l.records(t, d) {
		room := sectorSize - len(b)%sectorSize
		if r.length() > room {
			b = append(b, make([]byte, room)...)
		}
		b = r.appendTo(b, l.mtime)
	}
	return pad(b)
}

func (l *layout) extentSize(t *tree, d *directory) uint32 {
	return uint32(len(l.extent(t, d)))
}

func pad(b []byte) []byte {
	if r := len(b) % sectorSize; r != 0 || len(b) == 0 {
		b = append(b, make([]byte, sectorSize-r)...)
	}
	return b
}
