package spec

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// KeyPositions is where each spec key of a resource was written. It is a
// short list rather than a map of Pos: a Go map's first group alone is
// ~400 bytes, which was a third of the memory of a loaded resource, and
// a resource has a few keys (a lookup scans them). Its JSON form, in
// saved plans, is the map it replaced: {"memory":{"file":…,"line":…,"col":…}}.
type KeyPositions struct {
	list []keyPos
}

// keyPos is one key's position: 32 bytes. file points at the one copy of
// the file's name (fileNames), shared by every position in that file,
// which saves a string header per key.
type keyPos struct {
	key       string
	file      *string
	line, col int32
}

// pos is the entry as a Pos.
func (e keyPos) pos() Pos {
	return Pos{File: *e.file, Line: int(e.line), Col: int(e.col)}
}

// fileNames interns the file names of positions: a process reads a few
// files, so it stays small. lastFile is the name found last: the next
// position is almost always in the same file, and that lookup takes no
// lock (a sync.Map would box each string key: an allocation per lookup).
var (
	fileMu    sync.Mutex
	fileNames = map[string]*string{}
	lastFile  atomic.Pointer[string]
)

// noFile is the name of positions without a file.
var noFile = new(string)

// fileRef is the shared copy of file's name.
func fileRef(file string) *string {
	if file == "" {
		return noFile
	}
	if p := lastFile.Load(); p != nil && *p == file {
		return p
	}
	fileMu.Lock()
	p, ok := fileNames[file]
	if !ok {
		p = new(string)
		*p = file
		fileNames[file] = p
	}
	fileMu.Unlock()
	lastFile.Store(p)
	return p
}

// filePos is a Pos in 16 bytes rather than 32, for what Load keeps of
// every document at once.
type filePos struct {
	file      *string
	line, col int32
}

func newFilePos(p Pos) filePos {
	return filePos{file: fileRef(p.File), line: int32(p.Line), col: int32(p.Col)}
}

func (p filePos) pos() Pos { return Pos{File: *p.file, Line: int(p.line), Col: int(p.col)} }

// Get returns where key was written, and whether it was.
func (k KeyPositions) Get(key string) (Pos, bool) {
	for _, e := range k.list {
		if e.key == key {
			return e.pos(), true
		}
	}
	return Pos{}, false
}

// Has reports whether key was written.
func (k KeyPositions) Has(key string) bool {
	_, ok := k.Get(key)
	return ok
}

// File is the file key was written in ("" when it was not).
func (k KeyPositions) File(key string) string {
	p, _ := k.Get(key)
	return p.File
}

// Set records where key was written, replacing an earlier position.
func (k *KeyPositions) Set(key string, p Pos) {
	e := keyPos{key: key, line: int32(p.Line), col: int32(p.Col)}
	if n := len(k.list); n > 0 && *k.list[n-1].file == p.File {
		e.file = k.list[n-1].file // a resource's keys are mostly in one file
	} else {
		e.file = fileRef(p.File)
	}
	for i := range k.list {
		if k.list[i].key == key {
			k.list[i] = e
			return
		}
	}
	k.list = append(k.list, e)
}

// Len is the number of keys.
func (k KeyPositions) Len() int { return len(k.list) }

// grow makes room for n more keys (one allocation per resource).
func (k *KeyPositions) grow(n int) { k.list = slices.Grow(k.list, n) }

// Equal reports whether both hold the same keys at the same places, in
// any order (go-cmp uses it).
func (k KeyPositions) Equal(o KeyPositions) bool {
	if len(k.list) != len(o.list) {
		return false
	}
	for _, e := range k.list {
		if p, ok := o.Get(e.key); !ok || p != e.pos() {
			return false
		}
	}
	return true
}

// Map returns the positions as a map (a copy).
func (k KeyPositions) Map() map[string]Pos {
	m := make(map[string]Pos, len(k.list))
	for _, e := range k.list {
		m[e.key] = e.pos()
	}
	return m
}

// KeyPositionsOf makes KeyPositions from a map (tests, callers that build a
// Resource by hand).
func KeyPositionsOf(m map[string]Pos) KeyPositions {
	var k KeyPositions
	for _, key := range sortedKeys(m) {
		k.Set(key, m[key])
	}
	return k
}

// MarshalJSON writes the map form, keys sorted as encoding/json sorts a
// map's.
func (k KeyPositions) MarshalJSON() ([]byte, error) {
	return json.Marshal(k.Map())
}

// UnmarshalJSON reads the map form (a plan file written before or after
// the change); null is no keys.
func (k *KeyPositions) UnmarshalJSON(data []byte) error {
	if strings.TrimSpace(string(data)) == "null" {
		*k = KeyPositions{}
		return nil
	}
	var m map[string]Pos
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*k = KeyPositionsOf(m)
	return nil
}
