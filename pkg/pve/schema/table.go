package schema

//go:generate go run ./internal/gen -in ../../../testdata/pve-api/apidoc-9.1.json -out facts.json.gz

import (
	"bytes"
	_ "embed"
	"fmt"
	"net/url"
	"slices"
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
// from left to right ("/nodes/{node}/qemu/{vmid}/status/current" beats
// ".../{vmid}/{x}/current"), and of two equal shapes the smaller template
// wins. A trailing {volume} may swallow further segments as a last resort,
// since volume IDs ("local:iso/a.iso") sometimes arrive with their slash
// unescaped.
//
// The lookup walks a per-method segment trie built on the first call, so
// Methods must not change after the table is first matched.
func (t *Table) Match(method, path string) (*Method, map[string]string, bool) {
	root := t.index()[strings.ToUpper(method)]
	if root == nil {
		return nil, nil, false
	}
	segs := splitPath(path)
	m := root.exact(segs, 0)
	if m == nil {
		var best greedyMatch
		root.greedy(segs, 0, nil, &best)
		m = best.m
	}
	if m == nil {
		return nil, nil, false
	}
	return m, pathVars(m.Path, segs), true
}

// trieNode is one template segment position. Templates that share their
// literal segments and variable positions share a path; the variable
// names themselves do not matter for matching.
type trieNode struct {
	lit map[string]*trieNode
	vr  *trieNode // any variable segment
	// ends are the templates ending here, sorted by path (the tie-break);
	// slashEnds those among them whose last variable may hold slashes.
	ends, slashEnds []*Method
}

func (t *Table) index() map[string]*trieNode {
	t.once.Do(func() {
		t.trie = map[string]*trieNode{}
		for _, m := range t.Methods {
			root := t.trie[m.Method]
			if root == nil {
				root = &trieNode{}
				t.trie[m.Method] = root
			}
			root.insert(m)
		}
		for _, root := range t.trie {
			root.sortEnds()
		}
	})
	return t.trie
}

func (n *trieNode) insert(m *Method) {
	tsegs := splitPath(m.Path)
	for _, ts := range tsegs {
		if isVar(ts) {
			if n.vr == nil {
				n.vr = &trieNode{}
			}
			n = n.vr
			continue
		}
		if n.lit == nil {
			n.lit = map[string]*trieNode{}
		}
		next := n.lit[ts]
		if next == nil {
			next = &trieNode{}
			n.lit[ts] = next
		}
		n = next
	}
	n.ends = append(n.ends, m)
	if len(tsegs) > 0 && slashVars[tsegs[len(tsegs)-1]] {
		n.slashEnds = append(n.slashEnds, m)
	}
}

func (n *trieNode) sortEnds() {
	byPath := func(a, b *Method) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(n.ends, byPath)
	slices.SortFunc(n.slashEnds, byPath)
	for _, c := range n.lit {
		c.sortEnds()
	}
	if n.vr != nil {
		n.vr.sortEnds()
	}
}

// exact finds the best template as long as the path. Trying the literal
// child before the variable one at every depth visits candidates from the
// most literal (left to right) down, so the first hit is the best.
func (n *trieNode) exact(segs []string, i int) *Method {
	if i == len(segs) {
		if len(n.ends) > 0 {
			return n.ends[0]
		}
		return nil
	}
	if c := n.lit[segs[i]]; c != nil {
		if m := c.exact(segs, i+1); m != nil {
			return m
		}
	}
	if n.vr != nil && unescape(segs[i]) != "" {
		return n.vr.exact(segs, i+1)
	}
	return nil
}

// greedyMatch is the best template shorter than the path whose trailing
// variable swallows the rest; literal records, per template segment,
// whether it matched literally.
type greedyMatch struct {
	m       *Method
	literal []bool
}

// greedy collects the templates that end in a slash-holding variable
// before the path ends and keeps the best: literal segments first from
// the left, then the longer template, then the smaller path.
func (n *trieNode) greedy(segs []string, i int, literal []bool, best *greedyMatch) {
	if i > 0 && i < len(segs) && len(n.slashEnds) > 0 {
		m := n.slashEnds[0]
		if best.m == nil || betterMatch(literal, false, best.literal, false) ||
			(!betterMatch(best.literal, false, literal, false) && m.Path < best.m.Path) {
			best.m, best.literal = m, slices.Clone(literal)
		}
	}
	if i >= len(segs) {
		return
	}
	if c := n.lit[segs[i]]; c != nil {
		c.greedy(segs, i+1, append(literal, true), best)
	}
	if n.vr != nil && unescape(segs[i]) != "" {
		n.vr.greedy(segs, i+1, append(literal, false), best)
	}
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
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
// IDs such as "local:iso/a.iso", a firewall IP set entry's "10.0.0.0/8":
// pve-firewall registers ipset/{name} with an empty fragmentDelimiter);
// only they may swallow extra segments.
var slashVars = map[string]bool{"{volume}": true, "{cidr}": true}

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

// FamilyMax is the highest index of an indexed parameter family ("net" →
// 31): net0 … net31 are its members.
func FamilyMax(family string) int {
	if n, ok := familyMax[family]; ok {
		return n
	}
	return defaultFamilyMax
}

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
	if idx > FamilyMax(family) {
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
