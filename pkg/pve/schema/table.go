package schema

//go:generate go run ./internal/gen -in ../../../testdata/pve-api/apidoc-9.1.json -out facts.json.gz

import (
	"bytes"
	_ "embed"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// factsGz is generated from the apidoc by internal/gen; the apidoc itself
// is AGPL test data and must not be compiled in.
//
//go:embed facts.json.gz
var factsGz []byte

var defaultTable = sync.OnceValue(func() *Table {
	t, err := ReadFacts(bytes.NewReader(factsGz))
	if err != nil {
		panic(fmt.Sprintf("schema: embedded facts are corrupt (run go generate ./pkg/pve/schema): %v", err))
	}
	return t
})

// Default returns the table embedded in the binary (generated from the
// PVE 9.1 apidoc). It is shared: callers must not modify it.
func Default() *Table { return defaultTable() }

// Lookup finds a method by its path template ("/nodes/{node}/qemu").
func (t *Table) Lookup(method, template string) (*Method, bool) {
	m, ok := t.Methods[strings.ToUpper(method)+" "+template]
	return m, ok
}

// Match finds the method for a concrete path ("/nodes/pve/qemu/100/config")
// and returns the path variables ({"node":"pve","vmid":"100"}).
// Segments are URL-unescaped; literal template segments win over variables
// ("/nodes/{node}/qemu/{vmid}/status/current" beats ".../{vmid}/{x}/current").
// A trailing {volume} may swallow further segments as a last resort, since
// volume IDs ("local:iso/a.iso") sometimes arrive with their slash unescaped.
func (t *Table) Match(method, path string) (*Method, map[string]string, bool) {
	method = strings.ToUpper(method)
	segs := splitPath(path)
	var best *Method
	var bestScore []bool
	var bestGreedy bool
	for key, m := range t.Methods {
		if !strings.HasPrefix(key, method+" ") {
			continue
		}
		score, greedy, ok := matchTemplate(m.Path, segs)
		if !ok {
			continue
		}
		if best == nil || betterMatch(score, greedy, bestScore, bestGreedy) ||
			(!betterMatch(bestScore, bestGreedy, score, greedy) && m.Path < best.Path) {
			best, bestScore, bestGreedy = m, score, greedy
		}
	}
	if best == nil {
		return nil, nil, false
	}
	return best, pathVars(best.Path, segs), true
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// matchTemplate reports, per template segment, whether it matched literally.
func matchTemplate(template string, segs []string) (literal []bool, greedy, ok bool) {
	tsegs := splitPath(template)
	if len(tsegs) > len(segs) || len(tsegs) == 0 && len(segs) > 0 {
		return nil, false, false
	}
	literal = make([]bool, len(tsegs))
	for i, ts := range tsegs {
		if isVar(ts) {
			if unescape(segs[i]) == "" {
				return nil, false, false
			}
			continue
		}
		if ts != segs[i] {
			return nil, false, false
		}
		literal[i] = true
	}
	if len(segs) > len(tsegs) {
		if len(tsegs) == 0 || !slashVars[tsegs[len(tsegs)-1]] {
			return nil, false, false
		}
		greedy = true
	}
	return literal, greedy, true
}

// betterMatch prefers exact-length matches, then literal segments from left to right.
func betterMatch(a []bool, ag bool, b []bool, bg bool) bool {
	if ag != bg {
		return !ag
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i]
		}
	}
	return len(a) > len(b)
}

func pathVars(template string, segs []string) map[string]string {
	vars := map[string]string{}
	tsegs := splitPath(template)
	for i, ts := range tsegs {
		if !isVar(ts) {
			continue
		}
		v := segs[i]
		if i == len(tsegs)-1 && len(segs) > len(tsegs) {
			v = strings.Join(segs[i:], "/")
		}
		vars[ts[1:len(ts)-1]] = unescape(v)
	}
	return vars
}

// slashVars are the path variables whose values may contain "/" (volume
// IDs such as "local:iso/a.iso"); only they may swallow extra segments.
var slashVars = map[string]bool{"{volume}": true}

func isVar(seg string) bool {
	return len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}'
}

func unescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// familyMax holds the highest index of each indexed parameter family, as
// PVE defines them (MAX_NETS, MAX_SCSI_DISKS, …); unknown families get 31.
var familyMax = map[string]int{
	"net": 31, "scsi": 30, "virtio": 15, "sata": 5, "ide": 3, "ipconfig": 31,
	"hostpci": 15, "usb": 4, "serial": 3, "parallel": 2, "numa": 7,
	"unused": 255, "mp": 255, "dev": 255, "virtiofs": 9,
	"link": 7, "acmedomain": 4, // corosync links, ACME domains
}

const defaultFamilyMax = 31

// Param finds a parameter, mapping indexed names ("net0") to their family ("net[n]").
func (m *Method) Param(name string) (*Param, bool) {
	if p, ok := m.Params[name]; ok {
		return p, true
	}
	family, idx, ok := splitIndexed(name)
	if !ok {
		return nil, false
	}
	p, ok := m.Params[family+"[n]"]
	if !ok {
		return nil, false
	}
	limit, known := familyMax[family]
	if !known {
		limit = defaultFamilyMax
	}
	if idx > limit {
		return nil, false
	}
	return p, true
}

// splitIndexed splits "net12" into ("net", 12); no leading zeros, as PVE
// only knows the exact names net0…net31.
func splitIndexed(name string) (string, int, bool) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	digits := name[i:]
	if i == 0 || digits == "" || len(digits) > 3 || (len(digits) > 1 && digits[0] == '0') {
		return "", 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return "", 0, false
	}
	return name[:i], n, true
}
