package iso9660

import (
	"encoding/binary"
	"fmt"
	"time"
)

// The on-disk structures, after ECMA-119 (ISO 9660), SUSP 1.12 and RRIP
// 1.09 (IEEE P1281/P1282). Field offsets are written as numbers beside each
// structure; every multi-byte number is stored both little- and big-endian
// where ECMA-119 says "both-byte orders".

const sectorSize = 2048

func putBoth32(b []byte, v uint32) {
	binary.LittleEndian.PutUint32(b, v)
	binary.BigEndian.PutUint32(b[4:], v)
}

func putBoth16(b []byte, v uint16) {
	binary.LittleEndian.PutUint16(b, v)
	binary.BigEndian.PutUint16(b[2:], v)
}

// recordDate is the 7-byte date of directory records and Rock Ridge TF
// entries (ECMA-119 9.1.5): years since 1900, month, day, h, m, s, and the
// offset from GMT in 15-minute steps (always 0: times are kept in UTC).
func recordDate(t time.Time) []byte {
	t = t.UTC()
	return []byte{byte(t.Year() - 1900), byte(t.Month()), byte(t.Day()),
		byte(t.Hour()), byte(t.Minute()), byte(t.Second()), 0}
}

// volumeDate is the 17-byte date of volume descriptors (ECMA-119 8.4.26.1).
func volumeDate(t time.Time) []byte {
	t = t.UTC()
	s := fmt.Sprintf("%04d%02d%02d%02d%02d%02d%02d", t.Year(), t.Month(), t.Day(),
		t.Hour(), t.Minute(), t.Second(), t.Nanosecond()/1e7)
	return append([]byte(s), 0)
}

// unsetDate is how ECMA-119 8.4.26.1 writes "not specified".
func unsetDate() []byte {
	return append([]byte("0000000000000000"), 0)
}

// record is one directory record (ECMA-119 9.1).
type record struct {
	id   []byte // file identifier: 0x00 for ".", 0x01 for ".."
	lba  uint32
	size uint32
	dir  bool
	su   []byte // system use area (SUSP entries)
}

// length: 33 fixed bytes, the identifier, a pad byte that makes the system
// use area start at an even offset, and a final pad to an even length (as
// genisoimage and libisofs do; SUSP readers stop at fewer than 4 bytes).
func (r record) length() int {
	n := 33 + len(r.id)
	if len(r.id)%2 == 0 {
		n++
	}
	n += len(r.su)
	if n%2 == 1 {
		n++
	}
	return n
}

func (r record) appendTo(b []byte, t time.Time) []byte {
	rec := make([]byte, r.length())
	rec[0] = byte(len(rec))
	// rec[1]: extended attribute record length, none
	putBoth32(rec[2:], r.lba)
	putBoth32(rec[10:], r.size)
	copy(rec[18:25], recordDate(t))
	if r.dir {
		rec[25] = 0x02
	}
	// rec[26], rec[27]: file unit size and interleave gap, not interleaved
	putBoth16(rec[28:], 1) // volume sequence number
	rec[32] = byte(len(r.id))
	copy(rec[33:], r.id)
	off := 33 + len(r.id)
	if len(r.id)%2 == 0 {
		off++
	}
	copy(rec[off:], r.su)
	return append(b, rec...)
}

// POSIX modes as genisoimage -r writes them: readable (and, for
// directories, searchable) by all, writable by none, owned by root.
const (
	modeDir  = 0o040555
	modeFile = 0o100444
)

// Rock Ridge "RR" flags (RRIP 1.09 4.1.1): which RRIP entries follow. RRIP
// 1.12 dropped the entry; Linux still honours it, so it is written as
// genisoimage does.
const (
	rrPX = 0x01
	rrNM = 0x08
	rrTF = 0x80
)

// suspSP marks the root directory's "." record as using SUSP with no
// skipped bytes (SUSP 5.3); readers look for it before any other entry.
func suspSP() []byte { return []byte{'S', 'P', 7, 1, 0xBE, 0xEF, 0} }

func rockRR(flags byte) []byte { return []byte{'R', 'R', 5, 1, flags} }

// rockPX is the RRIP 1.09 POSIX attributes entry (36 bytes, without the
// file serial number that RRIP 1.12 added): mode, links, uid 0, gid 0.
func rockPX(mode, links uint32) []byte {
	b := make([]byte, 36)
	copy(b, "PX")
	b[2], b[3] = 36, 1
	putBoth32(b[4:], mode)
	putBoth32(b[12:], links)
	return b
}

// rockTF gives modification, access and attribute-change times (flags
// 0x0E), each in the 7-byte short form.
func rockTF(t time.Time) []byte {
	b := []byte{'T', 'F', 26, 1, 0x0E}
	d := recordDate(t)
	for range 3 {
		b = append(b, d...)
	}
	return b
}

// rockNM is the real name; names are at most maxNameLen bytes, so one
// entry always holds the whole name.
func rockNM(name string) []byte {
	return append([]byte{'N', 'M', byte(5 + len(name)), 1, 0}, name...)
}

// suspCE points to a continuation area (SUSP 5.1).
func suspCE(lba, offset, length uint32) []byte {
	b := make([]byte, 28)
	copy(b, "CE")
	b[2], b[3] = 28, 1
	putBoth32(b[4:], lba)
	putBoth32(b[12:], offset)
	putBoth32(b[20:], length)
	return b
}

// The extension reference that names Rock Ridge (RRIP 1.09 5.3). Linux only
// prefers Rock Ridge over Joliet names when it finds this ER entry, so it
// must be there; it is too long to share the root's "." record with the
// other entries and lives in a continuation area, as genisoimage puts it.
const (
	rrID     = "RRIP_1991A"
	rrDesc   = "THE ROCK RIDGE INTERCHANGE PROTOCOL PROVIDES SUPPORT FOR POSIX FILE SYSTEM SEMANTICS"
	rrSource = "PLEASE CONTACT DISC PUBLISHER FOR SPECIFICATION SOURCE.  SEE PUBLISHER IDENTIFIER IN PRIMARY VOLUME DESCRIPTOR FOR CONTACT INFORMATION."
)

func suspER() []byte {
	b := []byte{'E', 'R', byte(8 + len(rrID) + len(rrDesc) + len(rrSource)), 1,
		byte(len(rrID)), byte(len(rrDesc)), byte(len(rrSource)), 1}
	b = append(b, rrID...)
	b = append(b, rrDesc...)
	return append(b, rrSource...)
}

// ucs2 encodes the portable ASCII names this package allows as Joliet's
// big-endian UCS-2.
func ucs2(s string) []byte {
	b := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		b = append(b, 0, s[i])
	}
	return b
}

// pathTableEntry is one entry of a path table (ECMA-119 9.4); bigEndian
// selects the M table's byte order over the L table's.
func pathTableEntry(b []byte, id []byte, lba uint32, parent uint16, bigEndian bool) []byte {
	e := make([]byte, 8+len(id)+len(id)%2)
	e[0] = byte(len(id))
	if bigEndian {
		binary.BigEndian.PutUint32(e[2:], lba)
		binary.BigEndian.PutUint16(e[6:], parent)
	} else {
		binary.LittleEndian.PutUint32(e[2:], lba)
		binary.LittleEndian.PutUint16(e[6:], parent)
	}
	copy(e[8:], id)
	return append(b, e...)
}
