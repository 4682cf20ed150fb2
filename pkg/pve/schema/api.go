package schema

import "sync"

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
	// Requires names a parameter a request that sends this one must send
	// too (JSONSchema "requires": a network address its netmask).
	Requires string `json:"rq,omitempty"`

	// OneOf lists the variants of a parameter whose schema depends on
	// another parameter (TypeProperty, e.g. an SDN fabric's "protocol");
	// a value is valid when any variant accepts it.
	OneOf        []*Param `json:"of,omitempty"`
	TypeProperty string   `json:"tp,omitempty"`
	// InstanceTypes names the TypeProperty values a OneOf variant applies to.
	InstanceTypes []string `json:"it,omitempty"`
}

// Method is one (HTTP method, path template) of the API.
type Method struct {
	Method string            `json:"m"`
	Path   string            `json:"path"` // template: /nodes/{node}/qemu/{vmid}/config
	Params map[string]*Param `json:"params,omitempty"`
	// AdditionalProperties is set for the few methods that accept
	// parameters their schema does not name.
	AdditionalProperties bool `json:"ap,omitempty"`
}

// Table is a set of methods keyed by "METHOD path-template".
type Table struct {
	Methods map[string]*Method `json:"methods"`

	once sync.Once
	trie map[string]*trieNode // by HTTP method; built by the first Match
}

// CheckOptions tunes Method.Check.
type CheckOptions struct {
	// IgnoreRequired skips the check that every non-optional parameter is present.
	IgnoreRequired bool
}

// KV is one key=value item of a property string.
type KV struct{ Key, Value string }
