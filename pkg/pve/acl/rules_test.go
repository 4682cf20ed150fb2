package acl

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite permissions.json.gz from the apidoc")

// apidocRules derives every method's permission rule from the official
// apidoc: its `permissions` without the description.
func apidocRules(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "pve-api", "apidoc-9.1.json"))
	if err != nil {
		t.Fatal(err)
	}
	type node struct {
		Path     string                     `json:"path"`
		Info     map[string]json.RawMessage `json:"info"`
		Children []node                     `json:"children"`
	}
	var tree []node
	if err := json.Unmarshal(b, &tree); err != nil {
		t.Fatal(err)
	}
	rules := map[string]*Rule{}
	var walk func(n node)
	walk = func(n node) {
		for method, raw := range n.Info {
			var info struct {
				Permissions *Rule `json:"permissions"`
			}
			if err := json.Unmarshal(raw, &info); err != nil {
				t.Fatalf("%s %s: %v", method, n.Path, err)
			}
			rules[method+" "+n.Path] = info.Permissions
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	for _, n := range tree {
		walk(n)
	}
	out, err := json.Marshal(rules)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRulesAreTheAPIDocs keeps the embedded rules equal to the
// apidoc's; -update rewrites them.
func TestRulesAreTheAPIDocs(t *testing.T) {
	want := apidocRules(t)
	if *update {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(want)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("permissions.json.gz", buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		rulesGz = buf.Bytes()
	}
	rules, err := decodeRules(rulesGz)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(rules)
	if !bytes.Equal(got, want) {
		t.Fatal("permissions.json.gz differs from the apidoc's permissions: run go test ./pkg/pve/acl -run TestRulesAreTheAPIDocs -update")
	}
	if len(rules) < 600 {
		t.Fatalf("got %d rules, want every method of the apidoc", len(rules))
	}
}
