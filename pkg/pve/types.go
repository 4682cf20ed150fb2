package pve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pvectl/pvectl/internal/kvlist"
)

// Config is a PVE object's configuration with every value rendered as PVE
// would write it in a form ("2048", "1", "virtio=BC:24:11:..,bridge=vmbr0").
// Numbers keep no decimals when integral. "digest" is kept as a key.
// Members that are JSON null are left out: PVE means "unset" by them.
//
// It is a kvlist.List (internal/kvlist: a list sorted by key, used as a
// pointer like the map it replaces; spec.Params is the other one), read
// from JSON by configJSON.
type Config = kvlist.List[configJSON]

// NewConfig returns an empty config with room for n keys.
func NewConfig(n int) *Config { return kvlist.New[configJSON](n) }

// ConfigOf returns a config holding m's keys and values (nil for a nil
// map).
func ConfigOf(m map[string]string) *Config { return kvlist.Of[configJSON](m) }

// configJSON reads a config's JSON: each member as its form value,
// strings as they are, numbers in decimal, booleans as 1/0, anything else
// as compact JSON (decodeConfigJSON, in one pass). JSON null is an empty
// config. Client.Do hands it the answer without encoding/json's pass over
// it first (decodeConfigJSON checks the whole text itself).
type configJSON struct{}

// Decode reads the members of a config's JSON.
func (configJSON) Decode(b []byte) ([]kvlist.Entry, error) {
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
		return nil, err
	}
	// In key order; of a repeated key the last counts, as in
	// encoding/json (a null one unsets it).
	ms := *sp
	slices.SortStableFunc(ms, func(a, b configMember) int { return strings.Compare(a.k, b.k) })
	kv := make([]kvlist.Entry, 0, len(ms))
	for i, m := range ms {
		if m.set && (i+1 == len(ms) || ms[i+1].k != m.k) {
			kv = append(kv, kvlist.Entry{K: configKey(m.k), V: m.v})
		}
	}
	return kv, nil
}

// configMember is a member as decodeConfigJSON reports it; configScratch
// holds the lists Decode gathers them in.
type configMember struct {
	k, v string
	set  bool
}

var configScratch = sync.Pool{New: func() any { s := make([]configMember, 0, 64); return &s }}

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
