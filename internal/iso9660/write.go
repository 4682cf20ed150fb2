package iso9660

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// write emits the image in on-disk order. Every region checks that it
// starts at the sector plan gave it, so a layout bug is an error rather
// than a silently unreadable image.
func (l *layout) write(w io.Writer) error {
	out := &sectorWriter{w: bufio.NewWriterSize(w, 64<<10)}
	out.put(0, make([]byte, 16*sectorSize)) // system area, unused
	out.put(16, l.descriptor(nil))
	out.put(17, l.descriptor(l.joliet))
	out.put(18, terminator())
	for _, t := range []*tree{l.primary, l.joliet} {
		out.put(t.lTable, pad(t.pathTable(false)))
		out.put(t.mTable, pad(t.pathTable(true)))
	}
	out.put(l.ceLBA, pad(suspER()))
	for _, t := range []*tree{l.primary, l.joliet} {
		for _, d := range t.dirs {
			out.put(d.lba, l.extent(t, d))
		}
	}
	for _, f := range l.files {
		if len(f.data) > 0 {
			out.put(f.lba, f.data)
		}
	}
	out.put(l.sectors-paddingSectors, make([]byte, paddingSectors*sectorSize))
	if out.err == nil && out.at != l.sectors {
		out.err = fmt.Errorf("internal error: image ends at sector %d, planned %d", out.at, l.sectors)
	}
	if out.err != nil {
		return fmt.Errorf("write iso image: %w", out.err)
	}
	if err := out.w.Flush(); err != nil {
		return fmt.Errorf("write iso image: %w", err)
	}
	return nil
}

// sectorWriter writes whole sectors and remembers the first error.
type sectorWriter struct {
	w   *bufio.Writer
	at  uint32 // the sector the next region starts at
	err error
}

// put writes a region that plan placed at lba, zero-filling its last sector.
func (s *sectorWriter) put(lba uint32, b []byte) {
	if s.err != nil {
		return
	}
	if lba != s.at {
		s.err = fmt.Errorf("internal error: region planned at sector %d written at %d", lba, s.at)
		return
	}
	n := sectorsFor(uint64(len(b)))
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return
	}
	if r := len(b) % sectorSize; r != 0 {
		if _, err := s.w.Write(make([]byte, sectorSize-r)); err != nil {
			s.err = err
			return
		}
	}
	s.at += n
}

func terminator() []byte {
	b := make([]byte, sectorSize)
	b[0] = 255
	copy(b[1:], "CD001")
	b[6] = 1
	return b
}

// descriptor is the primary volume descriptor (ECMA-119 8.4) for t == nil,
// else the Joliet supplementary one: same layout, type 2, UCS-2 text and
// the escape sequence for UCS-2 level 3.
func (l *layout) descriptor(joliet *tree) []byte {
	t := l.primary
	text := func(s string, n int) []byte { return padText([]byte(s), n, []byte{' '}) }
	b := make([]byte, sectorSize)
	b[0] = 1
	if joliet != nil {
		t = joliet
		b[0] = 2
		text = func(s string, n int) []byte { return padText(ucs2(s), n, []byte{0, ' '}) }
		copy(b[88:], "%/E")
	}
	copy(b[1:], "CD001")
	b[6] = 1
	copy(b[8:40], text("", 32))                      // system identifier
	copy(b[40:72], text(l.label, 32))                // volume identifier
	putBoth32(b[80:], l.sectors)                     // volume space size
	putBoth16(b[120:], 1)                            // volume set size
	putBoth16(b[124:], 1)                            // volume sequence number
	putBoth16(b[128:], sectorSize)                   // logical block size
	putBoth32(b[132:], t.tableSize)                  // path table size
	binary.LittleEndian.PutUint32(b[140:], t.lTable) // L path table; 144: no optional one
	binary.BigEndian.PutUint32(b[148:], t.mTable)    // M path table; 152: no optional one
	rootRec := record{id: []byte{0}, lba: t.dirs[0].lba, size: t.dirs[0].size, dir: true}
	copy(b[156:190], rootRec.appendTo(nil, l.mtime))
	copy(b[190:318], text("", 128)) // volume set identifier
	copy(b[318:446], text("", 128)) // publisher
	copy(b[446:574], text("", 128)) // data preparer
	copy(b[574:702], text("", 128)) // application
	copy(b[702:739], text("", 37))  // copyright file
	copy(b[739:776], text("", 37))  // abstract file
	copy(b[776:813], text("", 37))  // bibliographic file
	copy(b[813:830], volumeDate(l.mtime))
	copy(b[830:847], volumeDate(l.mtime))
	copy(b[847:864], unsetDate()) // expiration
	copy(b[864:881], unsetDate()) // effective
	b[881] = 1                    // file structure version
	return b
}

// padText fills n bytes with s and then the space character sp; an odd
// byte left over in a UCS-2 field stays zero.
func padText(s []byte, n int, sp []byte) []byte {
	b := make([]byte, n)
	copy(b, s)
	for i := len(s); i+len(sp) <= n; i += len(sp) {
		copy(b[i:], sp)
	}
	return b
}

func (t *tree) pathTable(bigEndian bool) []byte {
	var b []byte
	for _, d := range t.dirs {
		b = pathTableEntry(b, t.pathID(d), d.lba, d.parent.number, bigEndian)
	}
	return b
}
