package pve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Config is a PVE object's configuration with every value rendered as PVE
// would write it in a form ("2048", "1", "virtio=BC:24:11:..,bridge=vmbr0").
// Numbers keep no decimals when integral. "digest" is kept as a key.
// Members that are JSON null are left out: PVE means "unset" by them.
//
// It is kept as a list sorted by key, as spec.Params is: a plan keeps
// one per guest alive, and a Go map of a dozen keys costs ~620 bytes
// where the list costs ~384. Lookups are a binary search: configs have a
// few dozen keys at most.
//
// It is used as *Config, which behaves like the map it replaces: it is
// shared, not copied, by assignment and when passed to a function (a
// callee's Set is seen by the caller, as with a map; use Clone for a
// copy); the methods that read accept nil (an empty config), and Set on
// nil panics as a write to a nil map does. A Config value would instead
// copy the list header on assignment, so that a Set on the copy might or
// might not show through the original — hence the pointer. Iteration is
// in key order, and a change made while iterating is safe: All goes on
// from the key after the last one it yielded.
type Config struct {
	kv []configEntry
}

type configEntry struct{ k, v string }

func compareConfigEntries(a, b configEntry) int { return strings.Compare(a.k, b.k) }

// NewConfig returns an empty config with room for n keys.
func NewConfig(n int) *Config { return &Config{kv: make([]configEntry, 0, n)} }

// ConfigOf returns a config holding m's keys and values (nil for a nil
// map).
func ConfigOf(m map[string]string) *Config {
	if m == nil {
		return nil
	}
	c := NewConfig(len(m))
	for k, v := range m {
		c.kv = append(c.kv, configEntry{k, v})
	}
	slices.SortFunc(c.kv, compareConfigEntries)
	return c
}

func (c *Config) find(k string) (int, bool) {
	return slices.BinarySearchFunc(c.kv, k, func(e configEntry, k string) int { return strings.Compare(e.k, k) })
}

// Get returns k's value, "" when k is not set.
func (c *Config) Get(k string) string {
	v, _ := c.Lookup(k)
	return v
}

// Lookup returns k's value and whether k is set.
func (c *Config) Lookup(k string) (string, bool) {
	if c == nil {
		return "", false
	}
	if i, ok := c.find(k); ok {
		return c.kv[i].v, true
	}
	return "", false
}

// Has says whether k is set.
func (c *Config) Has(k string) bool {
	_, ok := c.Lookup(k)
	return ok
}

// Set sets k to v.
func (c *Config) Set(k, v string) {
	i, ok := c.find(k)
	if ok {
		c.kv[i].v = v
		return
	}
	c.kv = slices.Insert(c.kv, i, configEntry{k, v})
}

// Delete removes k; a nil config or a key not set is left as it is.
func (c *Config) Delete(k string) {
	if c == nil {
		return
	}
	if i, ok := c.find(k); ok {
		c.kv = slices.Delete(c.kv, i, i+1)
	}
}

// Len is the number of keys set.
func (c *Config) Len() int {
	if c == nil {
		return 0
	}
	return len(c.kv)
}

// IsZero says whether no key is set, so that a field tagged omitzero is
// left out when empty, as an empty map tagged omitempty was.
func (c *Config) IsZero() bool { return c.Len() == 0 }

// All yields the keys and their values in key order.
func (c *Config) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		if c == nil {
			return
		}
		for i := 0; i < len(c.kv); {
			e := c.kv[i]
			if !yield(e.k, e.v) {
				return
			}
			// Go on after e.k, wherever a change made by yield moved it.
			j, found := c.find(e.k)
			if found {
				j++
			}
			i = j
		}
	}
}

// KeySeq yields the keys in order.
func (c *Config) KeySeq() iter.Seq[string] {
	return func(yield func(string) bool) {
		for k := range c.All() {
			if !yield(k) {
				return
			}
		}
	}
}

// Keys returns the keys, sorted.
func (c *Config) Keys() []string {
	if c == nil {
		return nil
	}
	out := make([]string, len(c.kv))
	for i, e := range c.kv {
		out[i] = e.k
	}
	return out
}

// Clone returns a copy (nil for nil).
func (c *Config) Clone() *Config {
	if c == nil {
		return nil
	}
	return &Config{kv: slices.Clone(c.kv)}
}

// Map returns the keys and values as a new map (nil for nil).
func (c *Config) Map() map[string]string {
	if c == nil {
		return nil
	}
	m := make(map[string]string, len(c.kv))
	for _, e := range c.kv {
		m[e.k] = e.v
	}
	return m
}

// Equal says whether c and o hold the same keys and values (nil and an
// empty config are equal). go-cmp uses it.
func (c *Config) Equal(o *Config) bool {
	if c.Len() == 0 || o.Len() == 0 {
		return c.Len() == o.Len()
	}
	return slices.Equal(c.kv, o.kv)
}

// String formats the config as fmt formats the map it replaces
// ("map[cores:2 memory:512]"), so that messages read as they did.
func (c *Config) String() string { return fmt.Sprint(c.Map()) }

// MarshalJSON writes the config as a JSON object, as the map was (keys
// in order; a saved plan's form is unchanged).
func (c *Config) MarshalJSON() ([]byte, error) {
	if c == nil {
		return []byte("null"), nil
	}
	return json.Marshal(c.Map())
}

// UnmarshalJSON renders each member as its form value: strings as they are,
// numbers in decimal, booleans as 1/0, anything else as compact JSON
// (decodeConfigJSON, in one pass). JSON null leaves the config empty.
func (c *Config) UnmarshalJSON(b []byte) error {
	sp := configScratch.Get().(*[]configMember)
	defer func() {
		clear(*sp)
		*sp = (*sp)[:0]
		configScratch.Put(sp)
	}()
	null, err := decodeConfigJSON(b, func(k, v string, set bool) {
		*sp = append(*sp, configMember{k, v, set})
	})
	if err != nil || null {
		c.kv = nil
		return err
	}
	// In key order; of a repeated key the last counts, as in
	// encoding/json (a null one unsets it).
	ms := *sp
	slices.SortStableFunc(ms, func(a, b configMember) int { return strings.Compare(a.k, b.k) })
	kv := make([]configEntry, 0, len(ms))
	for i, m := range ms {
		if m.set && (i+1 == len(ms) || ms[i+1].k != m.k) {
			kv = append(kv, configEntry{configKey(m.k), m.v})
		}
	}
	c.kv = kv
	return nil
}

// configMember is a member as decodeConfigJSON reports it; configScratch
// holds the lists UnmarshalJSON gathers them in.
type configMember struct {
	k, v string
	set  bool
}

var configScratch = sync.Pool{New: func() any { s := make([]configMember, 0, 64); return &s }}

// decodeAnswer is UnmarshalJSON for Client.Do, which hands it the answer
// without encoding/json's pass over it first (decodeConfigJSON checks
// the whole text itself).
func (c *Config) decodeAnswer(b []byte) error { return c.UnmarshalJSON(b) }

// configKeys holds one copy of each config key decoded: a plan reads the
// config of every guest at once, and their keys (memory, net0, digest, …)
// are the same few dozen, a string each per guest otherwise. Bounded: a
// server that invents keys gets its own copies past the bound.
var configKeys = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

const maxConfigKeys = 4096

func configKey(k string) string {
	configKeys.Lock()
	defer configKeys.Unlock()
	if v, ok := configKeys.m[k]; ok {
		return v
	}
	if len(configKeys.m) < maxConfigKeys {
		configKeys.m[k] = k
	}
	return k
}

// formValue renders one JSON value as PVE's form encoding would carry it;
// ok is false for null.
func formValue(v json.RawMessage) (string, bool, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", false, nil
	}
	switch v[0] {
	case 'n':
		return "", false, nil
	case 't':
		return "1", true, nil
	case 'f':
		return "0", true, nil
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", false, err
		}
		return s, true, nil
	case '{', '[':
		return compactJSON(v), true, nil
	}
	return formatNumber(string(v))
}

func formatNumber(n string) (string, bool, error) {
	if !strings.ContainsAny(n, ".eE") {
		if _, err := strconv.ParseInt(n, 10, 64); err == nil {
			return n, true, nil
		}
	}
	f, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return "", false, fmt.Errorf("not a number: %s", n)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10), true, nil
	}
	return strconv.FormatFloat(f, 'f', -1, 64), true, nil
}

// flexInt accepts a JSON number or a numeric string (PVE 7 sent LXC vmids
// as strings; /cluster/nextid answers a string).
type flexInt int

func (n *flexInt) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" || s == `""` {
		*n = 0
		return nil
	}
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		s = strings.TrimSpace(s)
	}
	v, ok, err := formatNumber(s)
	if err != nil || !ok {
		return fmt.Errorf("want an integer, got %s", string(b))
	}
	i, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("want an integer, got %s", string(b))
	}
	*n = flexInt(i)
	return nil
}

// flexBool accepts PVE's 0/1 (number or string) as well as JSON booleans.
type flexBool bool

func (f *flexBool) UnmarshalJSON(b []byte) error {
	s, ok, err := formValue(b)
	if err != nil {
		return err
	}
	switch {
	case !ok, s == "0", s == "":
		*f = false
	case s == "1":
		*f = true
	default:
		return fmt.Errorf("want 0 or 1, got %s", string(b))
	}
	return nil
}

// ClusterResource is one row of GET /cluster/resources.
type ClusterResource struct {
	ID       string `json:"id"`
	Type     string `json:"type"` // qemu | lxc | node | storage | pool | sdn
	Node     string `json:"node,omitempty"`
	VMID     int    `json:"vmid,omitempty"`
	Name     string `json:"name,omitempty"`
	Status   string `json:"status,omitempty"`
	Template bool   `json:"-"` // decoded from 0/1
	Tags     string `json:"tags,omitempty"`
	Pool     string `json:"pool,omitempty"`
	Storage  string `json:"storage,omitempty"`
	// Lock is a guest's config lock (create, clone, backup, migrate…),
	// as the guest lists and /cluster/resources show it.
	Lock string `json:"lock,omitempty"`
	// Content is a storage's content types (for type storage).
	Content string `json:"content,omitempty"`
}

// UnmarshalJSON takes template as 0/1 (or absent) and vmid as a number or a
// string. It reads the row in one pass (a plan reads a row per guest, twice)
// and is as strict as encoding/json: a member of the wrong type or bad
// JSON anywhere is an error (FuzzClusterResourceJSON).
func (r *ClusterResource) UnmarshalJSON(b []byte) error {
	s := &jsonScan{b: b}
	_, err := s.object(func(k string) error {
		v, err := s.rawValue()
		if err != nil {
			return err
		}
		return r.member(k, v)
	})
	return err
}

// member sets the field JSON key k names (matched as encoding/json
// matches a struct's fields: ignoring case) from its raw value v.
func (r *ClusterResource) member(k string, v []byte) error {
	switch {
	case strings.EqualFold(k, "vmid"):
		var n flexInt
		if err := n.UnmarshalJSON(v); err != nil {
			return err
		}
		r.VMID = int(n)
		return nil
	case strings.EqualFold(k, "template"):
		var t flexBool
		if err := t.UnmarshalJSON(v); err != nil {
			return err
		}
		r.Template = bool(t)
		return nil
	}
	field := r.stringField(k)
	switch {
	case field == nil:
		if !json.Valid(v) {
			return fmt.Errorf("invalid JSON in member %q", k)
		}
	case string(v) == "null": // leaves the field as it is
	case v[0] == '"':
		str, err := (&jsonScan{b: v}).str()
		if err != nil {
			return err
		}
		*field = str
	case !json.Valid(v):
		return fmt.Errorf("invalid JSON in member %q", k)
	default:
		return fmt.Errorf("json: cannot unmarshal %s into Go struct field ClusterResource.%s of type string", v, k)
	}
	return nil
}

// stringField is the string field key k names, nil for none.
func (r *ClusterResource) stringField(k string) *string {
	for _, f := range []struct {
		name string
		p    *string
	}{
		{"id", &r.ID}, {"type", &r.Type}, {"node", &r.Node}, {"name", &r.Name}, {"status", &r.Status},
		{"tags", &r.Tags}, {"pool", &r.Pool}, {"storage", &r.Storage}, {"lock", &r.Lock}, {"content", &r.Content},
	} {
		if strings.EqualFold(k, f.name) {
			return f.p
		}
	}
	return nil
}

// resourceList is a list answer of ClusterResource rows, read in one
// pass (Client.Do hands it the answer as it is).
type resourceList []ClusterResource

func (l *resourceList) decodeAnswer(b []byte) error {
	out := []ClusterResource{}
	null, err := (&jsonScan{b: b}).array(func(raw []byte) error {
		out = append(out, ClusterResource{})
		return out[len(out)-1].UnmarshalJSON(raw)
	})
	switch {
	case err != nil:
		return err
	case null:
		*l = nil
	default:
		*l = out
	}
	return nil
}

// MarshalJSON writes template the way PVE does (1, or absent), so that a
// resource survives a round trip through a saved plan.
func (r ClusterResource) MarshalJSON() ([]byte, error) {
	type plain ClusterResource
	aux := struct {
		plain
		Template int `json:"template,omitempty"`
	}{plain: plain(r)}
	if r.Template {
		aux.Template = 1
	}
	return json.Marshal(aux)
}

// QemuStatus is GET /nodes/{node}/qemu/{vmid}/status/current.
type QemuStatus struct {
	Status    string `json:"status"` // running | stopped
	QMPStatus string `json:"qmpstatus,omitempty"`
	Lock      string `json:"lock,omitempty"`
	Name      string `json:"name,omitempty"`
	Template  bool   `json:"-"`
}

// UnmarshalJSON takes template as 0/1 or a boolean.
func (s *QemuStatus) UnmarshalJSON(b []byte) error {
	type plain QemuStatus
	aux := struct {
		*plain
		Template flexBool `json:"template"`
	}{plain: (*plain)(s)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	s.Template = bool(aux.Template)
	return nil
}
