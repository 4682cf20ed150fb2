package schema

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// NodeAPIDoc is where a PVE node keeps the API viewer's schema, with the
// descriptions (package pve-docs); pveproxy serves the same file at
// https://NODE:8006/pve-docs/api-viewer/apidoc.js.
const NodeAPIDoc = "/usr/share/pve-docs/api-viewer/apidoc.js"

// Descriptions are PVE's own texts for API parameters and their
// property-string sub-keys. They are read at run time from an apidoc the
// user has, never compiled in: the apidoc is AGPL-3.0 text, and only its
// facts (names, types, ranges) are embedded in this Apache-2.0 binary (see
// internal/gen/NOTICE). The zero and nil Descriptions know nothing.
type Descriptions struct {
	// methods maps "METHOD path-template" to its parameters.
	methods map[string]map[string]*paramText
}

type paramText struct {
	text string
	sub  map[string]string
}

// Param returns PVE's description of a parameter of a method ("" when
// unknown). A family member ("net0") is looked up as its family ("net[n]").
func (d *Descriptions) Param(method, path, name string) string {
	if p := d.param(method, path, name); p != nil {
		return p.text
	}
	return ""
}

// SubKey returns PVE's description of a property-string sub-key ("" when
// unknown).
func (d *Descriptions) SubKey(method, path, name, sub string) string {
	if p := d.param(method, path, name); p != nil {
		return p.sub[sub]
	}
	return ""
}

// Len is the number of methods known.
func (d *Descriptions) Len() int {
	if d == nil {
		return 0
	}
	return len(d.methods)
}

func (d *Descriptions) param(method, path, name string) *paramText {
	if d == nil {
		return nil
	}
	ps := d.methods[strings.ToUpper(method)+" "+path]
	if p, ok := ps[name]; ok {
		return p
	}
	if family, _, ok := splitIndexed(name); ok {
		return ps[family+"[n]"]
	}
	return nil
}

// LoadDescriptions reads the descriptions of an apidoc file: the plain JSON
// tree (as in testdata/pve-api) or apidoc.js as PVE ships it.
func LoadDescriptions(path string) (*Descriptions, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := ReadDescriptions(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// ReadDescriptions reads an apidoc: a JSON list of path trees, or the
// JavaScript file PVE's API viewer loads, which assigns that list to a
// variable ("const apiSchema = [ … ];", pve-docs extractapi.pl) and goes on
// with the viewer's code.
func ReadDescriptions(r io.Reader) (*Descriptions, error) {
	br := bufio.NewReaderSize(r, peekWindow)
	if err := skipToSchema(br); err != nil {
		return nil, err
	}
	var roots []descNode
	if err := json.NewDecoder(br).Decode(&roots); err != nil {
		return nil, fmt.Errorf("decode apidoc: %w", err)
	}
	d := &Descriptions{methods: map[string]map[string]*paramText{}}
	var walk func(n *descNode)
	walk = func(n *descNode) {
		for verb, info := range n.Info {
			ps := map[string]*paramText{}
			for name, p := range info.Parameters.Properties {
				pt := &paramText{text: p.text()}
				if len(p.Format) > 0 && p.Format[0] == '{' {
					var subs map[string]descParam
					if json.Unmarshal(p.Format, &subs) == nil {
						pt.sub = map[string]string{}
						for k, s := range subs {
							if t := s.text(); t != "" {
								pt.sub[k] = t
							}
						}
					}
				}
				ps[name] = pt
			}
			d.methods[strings.ToUpper(verb)+" "+n.Path] = ps
		}
		for i := range n.Children {
			walk(&n.Children[i])
		}
	}
	for i := range roots {
		walk(&roots[i])
	}
	if len(d.methods) == 0 {
		return nil, errors.New("decode apidoc: no methods found")
	}
	return d, nil
}

// skipToSchema advances r to the '[' that opens the list of path trees:
// the first non-blank byte of a JSON file, or the first '[' after the
// assignment in apidoc.js.
func skipToSchema(r *bufio.Reader) error {
	// the assignment is on the first line
	head, _ := r.Peek(peekWindow)
	trimmed := bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		_, err := r.Discard(len(head) - len(trimmed))
		return err
	}
	eq := bytes.IndexByte(head, '=')
	if eq < 0 {
		return errors.New("decode apidoc: neither a JSON list nor apidoc.js (no schema assignment)")
	}
	open := bytes.IndexByte(head[eq:], '[')
	if open < 0 {
		return errors.New("decode apidoc: no list after the schema assignment")
	}
	_, err := r.Discard(eq + open)
	return err
}

type descNode struct {
	Path string `json:"path"`
	Info map[string]struct {
		Parameters struct {
			Properties map[string]descParam `json:"properties"`
		} `json:"parameters"`
	} `json:"info"`
	Children []descNode `json:"children"`
}

type descParam struct {
	Description        string          `json:"description"`
	VerboseDescription string          `json:"verbose_description"`
	Format             json.RawMessage `json:"format"`
}

// text prefers the long form where PVE has one (it includes the short).
func (p descParam) text() string {
	t := p.VerboseDescription
	if t == "" {
		t = p.Description
	}
	return strings.TrimSpace(t)
}

// peekWindow is how far into an apidoc the start of the list is looked for.
const peekWindow = 1 << 16
