package iso9660

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// A small ISO 9660 reader for tests, written from ECMA-119, SUSP and
// RRIP rather than from the writer: it shares no code with it, so the
// writer's structures are checked against the standard's reading of them.

type ptEntry struct {
	Num, Parent int
	LBA         uint32
	ID          string // as recorded; Joliet decoded from UCS-2
}

type entry struct {
	Path    string // real name path (Rock Ridge NM or Joliet), "/" rooted
	ID      string // identifier as recorded (decoded for Joliet)
	LBA     uint32
	Size    uint32
	Dir     bool
	Mode    uint32 // Rock Ridge PX mode, primary tree only
	Links   uint32
	RRFlags byte
}

type volume struct {
	Label     string
	Sectors   uint32
	TableSize uint32
	L, M      []ptEntry
	Entries   []entry // depth-first, records in on-disk order
	SelfLBA   map[string]uint32
	ParentLBA map[string]uint32
	ER        string // the Rock Ridge extension identifier, if any
}

func sector(img []byte, lba uint32) []byte {
	off := int(lba) * sectorSize
	if off+sectorSize > len(img) {
		return nil
	}
	return img[off : off+sectorSize]
}

func both32ok(b []byte) (uint32, error) {
	le, be := binary.LittleEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
	if le != be {
		return 0, fmt.Errorf("both-endian mismatch %d/%d", le, be)
	}
	return le, nil
}

func decodeUCS2(b []byte) string {
	var s []rune
	for i := 0; i+1 < len(b); i += 2 {
		s = append(s, rune(b[i])<<8|rune(b[i+1]))
	}
	return string(s)
}

// readVolume reads the primary tree (joliet false) or the Joliet tree.
func readVolume(img []byte, joliet bool) (*volume, error) {
	var vd []byte
	for lba := uint32(16); ; lba++ {
		s := sector(img, lba)
		if s == nil || s[0] == 255 {
			return nil, fmt.Errorf("descriptor not found")
		}
		if string(s[1:6]) != "CD001" {
			return nil, fmt.Errorf("sector %d: no CD001", lba)
		}
		if !joliet && s[0] == 1 || joliet && s[0] == 2 && bytes.Equal(s[88:91], []byte("%/E")) {
			vd = s
			break
		}
	}
	v := &volume{SelfLBA: map[string]uint32{}, ParentLBA: map[string]uint32{}}
	label := vd[40:72]
	if joliet {
		v.Label = string(bytes.TrimRight([]byte(decodeUCS2(label)), " "))
	} else {
		v.Label = string(bytes.TrimRight(label, " "))
	}
	var err error
	if v.Sectors, err = both32ok(vd[80:]); err != nil {
		return nil, err
	}
	if v.TableSize, err = both32ok(vd[132:]); err != nil {
		return nil, err
	}
	lTable := binary.LittleEndian.Uint32(vd[140:])
	mTable := binary.BigEndian.Uint32(vd[148:])
	v.L = readPathTable(img, lTable, v.TableSize, binary.LittleEndian, joliet)
	v.M = readPathTable(img, mTable, v.TableSize, binary.BigEndian, joliet)
	root := vd[156:190]
	rootLBA, _ := both32ok(root[2:])
	rootSize, _ := both32ok(root[10:])
	return v, v.walk(img, "/", rootLBA, rootSize, joliet, true)
}

func readPathTable(img []byte, lba, size uint32, order binary.ByteOrder, joliet bool) []ptEntry {
	b := img[int(lba)*sectorSize : int(lba)*sectorSize+int(size)]
	var out []ptEntry
	for len(b) >= 8 {
		n := int(b[0])
		id := b[8 : 8+n]
		e := ptEntry{Num: len(out) + 1, Parent: int(order.Uint16(b[6:])), LBA: order.Uint32(b[2:]), ID: string(id)}
		if joliet && !(n == 1 && id[0] == 0) {
			e.ID = decodeUCS2(id)
		}
		if n == 1 && id[0] == 0 {
			e.ID = ""
		}
		out = append(out, e)
		b = b[8+n+n%2:]
	}
	return out
}

func (v *volume) walk(img []byte, dir string, lba, size uint32, joliet, root bool) error {
	data := img[int(lba)*sectorSize : int(lba)*sectorSize+int(size)]
	var subdirs []entry
	for off := 0; off < len(data); {
		n := int(data[off])
		if n == 0 { // the rest of this sector is padding
			off = (off/sectorSize + 1) * sectorSize
			continue
		}
		if off%sectorSize+n > sectorSize {
			return fmt.Errorf("%s: record at %d crosses a sector", dir, off)
		}
		r := data[off : off+n]
		off += n
		e := entry{Dir: r[25]&2 != 0}
		e.LBA, _ = both32ok(r[2:])
		e.Size, _ = both32ok(r[10:])
		idLen := int(r[32])
		id := r[33 : 33+idLen]
		su := r[33+idLen+(idLen+1)%2:]
		if idLen == 1 && id[0] <= 1 {
			if id[0] == 0 {
				v.SelfLBA[dir] = e.LBA
				if root && !joliet {
					if err := v.readRootSUSP(img, su); err != nil {
						return err
					}
				}
			} else {
				v.ParentLBA[dir] = e.LBA
			}
			continue
		}
		e.ID = string(id)
		name := e.ID
		if joliet {
			e.ID = decodeUCS2(id)
			name = e.ID
		} else {
			var nm string
			nm, e.Mode, e.Links, e.RRFlags = readRock(su)
			if nm != "" {
				name = nm
			}
		}
		e.Path = dir + name
		v.Entries = append(v.Entries, e)
		if e.Dir {
			subdirs = append(subdirs, e)
		}
	}
	for _, d := range subdirs {
		if err := v.walk(img, d.Path+"/", d.LBA, d.Size, joliet, false); err != nil {
			return err
		}
	}
	return nil
}

// readRock pulls the RRIP entries this writer emits out of a system use
// area; a reader that did not know them would skip them by length.
func readRock(su []byte) (name string, mode, links uint32, flags byte) {
	for len(su) >= 4 && int(su[2]) >= 4 && int(su[2]) <= len(su) {
		n := int(su[2])
		switch string(su[:2]) {
		case "NM":
			name += string(su[5:n])
		case "PX":
			mode, _ = both32ok(su[4:])
			links, _ = both32ok(su[12:])
		case "RR":
			flags = su[4]
		}
		su = su[n:]
	}
	return
}

func (v *volume) readRootSUSP(img []byte, su []byte) error {
	if len(su) < 7 || string(su[:2]) != "SP" || su[4] != 0xBE || su[5] != 0xEF {
		return fmt.Errorf("root record has no SUSP SP entry first")
	}
	for len(su) >= 4 && int(su[2]) >= 4 && int(su[2]) <= len(su) {
		n := int(su[2])
		if string(su[:2]) == "CE" {
			lba, _ := both32ok(su[4:])
			off, _ := both32ok(su[12:])
			ln, _ := both32ok(su[20:])
			ce := img[int(lba)*sectorSize+int(off) : int(lba)*sectorSize+int(off)+int(ln)]
			if string(ce[:2]) != "ER" {
				return fmt.Errorf("continuation area holds %q, want ER", ce[:2])
			}
			v.ER = string(ce[8 : 8+int(ce[4])])
		}
		su = su[n:]
	}
	return nil
}
