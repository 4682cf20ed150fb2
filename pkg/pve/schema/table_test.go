package schema

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		method, path string
		wantTemplate string
		wantVars     map[string]string
	}{
		{"GET", "/nodes/pve/qemu/100/config", "/nodes/{node}/qemu/{vmid}/config", map[string]string{"node": "pve", "vmid": "100"}},
		{"get", "/nodes/pve/qemu/100/config/", "/nodes/{node}/qemu/{vmid}/config", map[string]string{"node": "pve", "vmid": "100"}},
		{"POST", "/nodes/pve/qemu", "/nodes/{node}/qemu", map[string]string{"node": "pve"}},
		{"GET", "/nodes/pve/qemu/100/status/current", "/nodes/{node}/qemu/{vmid}/status/current", map[string]string{"node": "pve", "vmid": "100"}},
		{"POST", "/nodes/pve/qemu/100/status/start", "/nodes/{node}/qemu/{vmid}/status/start", map[string]string{"node": "pve", "vmid": "100"}},
		{"GET", "/version", "/version", map[string]string{}},
		{"GET", "/cluster/resources", "/cluster/resources", map[string]string{}},
		{"PUT", "/nodes/pve/network", "/nodes/{node}/network", map[string]string{"node": "pve"}},
		{"PUT", "/nodes/pve/network/vmbr1", "/nodes/{node}/network/{iface}", map[string]string{"node": "pve", "iface": "vmbr1"}},
		{"GET", "/nodes/pve/tasks/UPID:pve:00001234:00005678:65000000:qmcreate:100:root@pam:/status", "/nodes/{node}/tasks/{upid}/status",
			map[string]string{"node": "pve", "upid": "UPID:pve:00001234:00005678:65000000:qmcreate:100:root@pam:"}},
		{"DELETE", "/nodes/pve/storage/local/content/local%3Aiso%2Fnoble.iso", "/nodes/{node}/storage/{storage}/content/{volume}",
			map[string]string{"node": "pve", "storage": "local", "volume": "local:iso/noble.iso"}},
		{"DELETE", "/nodes/pve/storage/local/content/local:iso/noble.iso", "/nodes/{node}/storage/{storage}/content/{volume}",
			map[string]string{"node": "pve", "storage": "local", "volume": "local:iso/noble.iso"}},
		{"POST", "/access/users/deploy@pve/token/ci", "/access/users/{userid}/token/{tokenid}", map[string]string{"userid": "deploy@pve", "tokenid": "ci"}},
		{"GET", "/pools", "/pools", map[string]string{}},
		{"POST", "/nodes/pve/storage/local/download-url", "/nodes/{node}/storage/{storage}/download-url", map[string]string{"node": "pve", "storage": "local"}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			m, vars, ok := Default().Match(tt.method, tt.path)
			if !ok {
				t.Fatalf("Match: not found")
			}
			if m.Path != tt.wantTemplate {
				t.Errorf("template: got %q want %q", m.Path, tt.wantTemplate)
			}
			if diff := cmp.Diff(tt.wantVars, vars); diff != "" {
				t.Errorf("vars (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMatchMisses(t *testing.T) {
	tests := []struct{ method, path string }{
		{"GET", "/nope"},
		{"PATCH", "/nodes/pve/qemu"},
		{"GET", "/version/extra"},
		{"GET", "/nodes/pve/kubernetes"},
		{"GET", "/nodes//qemu"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			if m, _, ok := Default().Match(tt.method, tt.path); ok {
				t.Errorf("Match: got %s %s want no match", m.Method, m.Path)
			}
		})
	}
}

// getTable is a table of GET methods at paths.
func getTable(paths ...string) *Table {
	tbl := &Table{Methods: map[string]*Method{}}
	for _, p := range paths {
		tbl.Methods["GET "+p] = &Method{Method: "GET", Path: p}
	}
	return tbl
}

// wantMatch checks which template GET path matches in tbl ("" none).
func wantMatch(t *testing.T, tbl *Table, path, want string) {
	t.Helper()
	m, _, ok := tbl.Match("GET", path)
	switch {
	case want == "" && ok:
		t.Errorf("got %q want no match", m.Path)
	case want != "" && !ok:
		t.Fatalf("Match: not found")
	case want != "" && m.Path != want:
		t.Errorf("got %q want %q", m.Path, want)
	}
}

func TestMatchPrefersLiterals(t *testing.T) {
	tbl := getTable("/a/{x}/c", "/a/b/{y}", "/a/{x}", "/a/b", "/v/{volume}")
	tests := []struct{ path, want string }{
		{"/a/b/c", "/a/b/{y}"},
		{"/a/z/c", "/a/{x}/c"},
		{"/a/b", "/a/b"},
		{"/a/q", "/a/{x}"},
		{"/v/local:iso/a.iso", "/v/{volume}"}, // a volume ID swallows the rest
		{"/a/q/r/s", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			wantMatch(t, tbl, tt.path, tt.want)
		})
	}
}

func TestMatchTieBreaks(t *testing.T) {
	tbl := getTable("/s/{b}", "/s/{a}", "/g/{volume}", "/g/x/{volume}", "/g/{n}/{volume}", "/g/{n}/y/{volume}", "/h/{volume}", "/h/{n}/{m}")
	tests := []struct{ path, want string }{
		{"/s/q", "/s/{a}"},                  // equal shapes: the smaller template
		{"/g/x/a/b", "/g/x/{volume}"},       // greedy: literal first
		{"/g/z/a/b", "/g/{n}/{volume}"},     // greedy: the longer template
		{"/g/z/y/a/b", "/g/{n}/y/{volume}"}, // greedy: a later literal
		{"/h/a/b", "/h/{n}/{m}"},            // an exact match beats a greedy one
		{"/h/a/b/c", "/h/{volume}"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			wantMatch(t, tbl, tt.path, tt.want)
		})
	}
}

// TestMatchAgreesWithScan checks the indexed lookup against a plain scan
// of every template, for paths made from every template of a table:
// variables filled in (also escaped or empty), literals swapped for other
// templates' literals, segments added and dropped. The apidoc has few
// ambiguous shapes, so a synthetic table full of them is checked too.
func TestMatchAgreesWithScan(t *testing.T) {
	synthetic := &Table{Methods: map[string]*Method{}}
	for _, p := range []string{"/a/{x}/c", "/a/b/{y}", "/a/{x}", "/a/b", "/a/{x}/{z}", "/a/b/c/{volume}",
		"/a/{x}/{volume}", "/{r}/b/c", "/{r}/{s}/{t}", "/a/{y}/c/d", "/v/{volume}", "/v/{n}/{volume}", "/v/x/{m}",
		"/w/{volume}", "/w/{z}/{volume}"} {
		for _, verb := range []string{"GET", "PUT"} {
			synthetic.Methods[verb+" "+p] = &Method{Method: verb, Path: p}
		}
	}
	tests := []struct {
		name  string
		tbl   *Table
		fills []string
		verbs int // HTTP methods tried per path
		min   int
	}{
		{"apidoc", Default(), []string{"pve", "100", "local%3Aiso%2Fa.iso", "", "%", "status", "config"}, 1, 5000},
		{"synthetic", synthetic, []string{"b", "c", "q", "", "x", "d", "local%3Aa"}, 6, 500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checked := agreeWithScan(t, tc.tbl, tc.fills, tc.verbs)
			if checked < tc.min {
				t.Errorf("checked only %d requests, want at least %d", checked, tc.min)
			}
		})
	}
}

func agreeWithScan(t *testing.T, tbl *Table, fills []string, verbs int) int {
	t.Helper()
	var literals []string
	seen := map[string]bool{}
	for _, m := range tbl.Methods {
		for _, s := range splitPath(m.Path) {
			if !isVar(s) && !seen[s] {
				seen[s] = true
				literals = append(literals, s)
			}
		}
	}
	slices.Sort(literals)
	var paths []string
	for _, m := range tbl.Methods {
		tsegs := splitPath(m.Path)
		for k := range 3 { // three fills per template keep the test quick
			fi := (k*3 + len(m.Path)) % len(fills)
			fill := fills[fi]
			segs := make([]string, len(tsegs))
			for i, s := range tsegs {
				segs[i] = s
				if isVar(s) {
					segs[i] = fill
				}
			}
			paths = append(paths, "/"+strings.Join(segs, "/"))
			paths = append(paths, "/"+strings.Join(append(slices.Clone(segs), "local:iso", "a.iso"), "/"))
			if len(segs) > 1 {
				paths = append(paths, "/"+strings.Join(segs[:len(segs)-1], "/"))
				swapped := slices.Clone(segs)
				swapped[(fi+len(m.Path))%len(segs)] = literals[(fi*31+len(m.Path))%len(literals)]
				paths = append(paths, "/"+strings.Join(swapped, "/"))
			}
		}
	}
	paths = append(paths, "/", "", "//", "/nodes//qemu")
	methods := []string{"GET", "POST", "PUT", "DELETE", "get", "PATCH"}
	checked := 0
	for i, p := range paths {
		for j := range verbs {
			method := methods[(i+j)%len(methods)]
			got, gotVars, gotOK := tbl.Match(method, p)
			want, wantVars, wantOK := scanMatch(tbl, method, p)
			if gotOK != wantOK || got != want {
				t.Fatalf("%s %s: got %v %v want %v %v", method, p, describeMethod(got), gotOK, describeMethod(want), wantOK)
			}
			if diff := cmp.Diff(wantVars, gotVars); diff != "" {
				t.Fatalf("%s %s: vars (-want +got):\n%s", method, p, diff)
			}
			checked++
		}
	}
	return checked
}

func describeMethod(m *Method) string {
	if m == nil {
		return "<nil>"
	}
	return m.Method + " " + m.Path
}

// scanMatch is the reference: every template of the method, scored.
func scanMatch(t *Table, method, path string) (*Method, map[string]string, bool) {
	method = strings.ToUpper(method)
	segs := splitPath(path)
	var best *Method
	var bestScore []bool
	var bestGreedy bool
	for key, m := range t.Methods {
		if !strings.HasPrefix(key, method+" ") {
			continue
		}
		score, greedy, ok := scanTemplate(m.Path, segs)
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

func scanTemplate(template string, segs []string) (literal []bool, greedy, ok bool) {
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
