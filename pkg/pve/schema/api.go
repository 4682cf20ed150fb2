// Package schema holds the facts pvectl needs from the PVE API schema —
// parameter names, types, enums, ranges, property-string sub-keys — as a
// compact table generated from the official apidoc (descriptions dropped),
// and checks values and requests against it.
package schema

// This file fixes the exported surface that spec, pvesim and the tests are
// written against. Bodies are filled in by the implementation.

import (
	"io"
	"net/url"
)

// Param describes one API parameter or one property-string sub-key.
type Param struct {
	Type       string            `json:"t,omitempty"` // string | integer | number | boolean | array | object
	Optional   bool              `json:"o,omitempty"`
	Enum       []string          `json:"e,omitempty"`
	Min        *float64          `json:"min,omitempty"`
	Max        *float64          `json:"max,omitempty"`
	MinLength  int               `json:"minl,omitempty"`
	MaxLength  int               `json:"maxl,omitempty"`
	Pattern    string            `json:"p,omitempty"`
	Format     string            `json:"f,omitempty"`  // named format, e.g. "pve-vmid", "pve-configid-list"
	Props      map[string]*Param `json:"ps,omitempty"` // property-string sub-keys (format given inline)
	DefaultKey bool              `json:"dk,omitempty"` // this sub-key may be written without "name="
	Alias      string            `json:"a,omitempty"`  // this sub-key is an alias of another
	KeyAlias   string            `json:"ka,omitempty"` // "e1000=MAC" means model=e1000,macaddr=MAC
	Items      *Param            `json:"i,omitempty"`
	Default    any               `json:"d,omitempty"`
	TypeText   string            `json:"tt,omitempty"`
}

// Method is one (HTTP method, path template) of the API.
type Method struct {
	Method string            `json:"m"`
	Path   string            `json:"path"` // template: /nodes/{node}/qemu/{vmid}/config
	Params map[string]*Param `json:"params,omitempty"`
}

// Table is a set of methods keyed by "METHOD path-template".
type Table struct {
	Methods map[string]*Method `json:"methods"`
}

// FromAPIDoc reads the official apidoc JSON (a list of path trees).
func FromAPIDoc(r io.Reader) (*Table, error) { panic("TODO") }

// Default returns the table embedded in the binary (generated; see gen.go).
func Default() *Table { panic("TODO") }

// Lookup finds a method by its path template ("/nodes/{node}/qemu").
func (t *Table) Lookup(method, template string) (*Method, bool) { panic("TODO") }

// Match finds the method for a concrete path ("/nodes/pve/qemu/100/config")
// and returns the path variables ({"node":"pve","vmid":"100"}).
func (t *Table) Match(method, path string) (*Method, map[string]string, bool) { panic("TODO") }

// Param finds a parameter, mapping indexed names ("net0") to their family ("net[n]").
func (m *Method) Param(name string) (*Param, bool) { panic("TODO") }

// CheckOptions tunes Method.Check.
type CheckOptions struct {
	// IgnoreRequired skips the check that every non-optional parameter is present.
	IgnoreRequired bool
}

// Check validates a whole request's parameters (path variables merged in)
// the way PVE does: unknown parameters, missing required ones and bad values.
// The result maps parameter name to message, like PVE's 400 "errors"; nil if valid.
func (m *Method) Check(params url.Values, opts CheckOptions) map[string]string { panic("TODO") }

// Check validates one wire value (booleans as 0/1, numbers in decimal,
// property strings as "k=v,k=v") against the parameter, including
// property-string sub-keys, enums, ranges, patterns and known named formats.
func (p *Param) Check(value string) error { panic("TODO") }

// KV is one key=value item of a property string.
type KV struct{ Key, Value string }

// ParsePropertyString splits "virtio=BC:..,bridge=vmbr0" into items, resolving
// the default key and key aliases when p describes the format (p may be nil:
// then a bare item gets Key "").
func ParsePropertyString(s string, p *Param) ([]KV, error) { panic("TODO") }

// FormatPropertyString renders items back, default key first without its name.
func FormatPropertyString(items []KV, p *Param) string { panic("TODO") }
