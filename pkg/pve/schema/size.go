package schema

import (
	"strconv"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// sizeRE is PVE's disk size: a number with an optional binary unit
// (pve-common src/PVE/JSONSchema.pm parse_size).
var sizeRE = lazyre.New(`^(\d+(?:\.\d+)?)([KMGT](?:iB)?)?$`)

// ParseSize reads a PVE disk size ("32G", "512M", "1.5T", "4096") in
// bytes, as PVE does: a bare number is bytes, units are powers of 1024,
// the result is truncated to whole bytes.
func ParseSize(s string) (int64, bool) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	shift := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[m[2][:min(len(m[2]), 1)]]
	return int64(f * float64(int64(1)<<shift)), true
}

// FormatSize writes bytes the way PVE writes a disk size back: the
// largest unit that divides it exactly (pve-common format_size).
func FormatSize(b int64) string {
	for _, u := range []struct {
		shift uint
		unit  string
	}{{40, "T"}, {30, "G"}, {20, "M"}, {10, "K"}} {
		if n := int64(1) << u.shift; b >= n && b%n == 0 {
			return strconv.FormatInt(b/n, 10) + u.unit
		}
	}
	return strconv.FormatInt(b, 10)
}
