package spec

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Kind names. Only the registries (this file in spec, kind.go in the
// planner) name kinds; the rest of the code asks the kind's row.
const (
	KindConnection   = "Connection"
	KindDefaults     = "Defaults"
	KindQemuVM       = "QemuVM"
	KindPool         = "Pool"
	KindLinuxBridge  = "LinuxBridge"
	KindNetworkApply = "NetworkApply"
	KindLxcContainer = "LxcContainer"
	KindNodeDns      = "NodeDns"
)

// ownType is the YAML shape a pvectl-own key accepts; it follows from the
// Go type of the key's field in the kind's Keys struct.
type ownType int

const (
	ownString     ownType = iota // any non-null scalar, kept as written
	ownBool                      // true | false
	ownInt                       // an integer
	ownStringList                // a list of strings, or one comma-separated string
)

func (t ownType) String() string {
	switch t {
	case ownBool:
		return "a boolean (true or false)"
	case ownInt:
		return "an integer"
	case ownStringList:
		return "a list of strings (or one comma-separated string)"
	}
	return "a string"
}

// apiCall is a PVE API method and path template.
type apiCall struct{ Method, Path string }

// docRole says what a document of a kind is for.
type docRole int

const (
	roleResource   docRole = iota // a managed resource: becomes a Resource
	roleConnection                // configures a named connection
	roleDefaults                  // holds per-kind defaults
)

// kindInfo is one row of the kind registry: everything Load needs to turn
// a document of that kind into a Resource, and what other code needs to
// know about the kind without naming it. A new kind is a new row.
type kindInfo struct {
	Name string
	Role docRole
	// Noun names the kind's PVE object in messages ("VM", "bridge").
	Noun string
	// Create is the PVE call that creates the kind: its parameters are the
	// spec keys passed through verbatim. nil for kinds with own keys only.
	Create *apiCall
	// Params, when set, limits the accepted parameters of Create.
	Params []string
	// Keys is the kind's struct of pvectl (camelCase) keys, as a nil
	// pointer of its type (e.g. (*GuestKeys)(nil)); its JSON field names
	// are the keys, its field types their shapes. nil: no own keys.
	Keys any
	// Unsupported are pvectl keys of the design that this version does not
	// implement yet: they get "not supported yet" rather than "unknown".
	Unsupported []string
	// Identity is the PVE parameter defaulted from the document's name.
	Identity string
	// Unique are other parameters that identify a resource when set (a
	// QemuVM's vmid): no two resources may share one, so Defaults cannot
	// set them.
	Unique []string
	// Identities returns what a resource is known by in PVE (see
	// identity); two resources of one connection claiming one identity in
	// one namespace are refused.
	Identities func(r *Resource) []identity
	// Hint says how to resolve an identity clash.
	Hint string
	// RefValue is the value other resources name this one by (a Pool by
	// its poolid, a bridge by its iface); nil: not referable by value.
	RefValue func(r *Resource) string
	// Refs are the implicit references the kind's values make: each one
	// is a dependency edge to the referenced resource of the specs.
	Refs []refRule
	// Fixed are parameters whose value the kind decides.
	Fixed map[string]string
	// ValueAliases map friendlier values to PVE's, per parameter.
	ValueAliases map[string]map[string]string
	// Required are own keys a document must set.
	Required []string
	// Check finds what PVE would refuse in a resource's values beyond the
	// schema's checks (positions from r.KeyPos); nil: nothing more.
	Check func(r *Resource) []Diagnostic

	// own caches the own keys' shapes, derived from Keys.
	own func() map[string]ownType
}

// acceptsParam reports whether a PVE parameter may be written in the spec.
func (k *kindInfo) acceptsParam(name string) bool {
	return k.Create != nil && (k.Params == nil || slices.Contains(k.Params, name))
}

func (k *kindInfo) unsupported(key string) bool { return slices.Contains(k.Unsupported, key) }

// ownType returns the shape of own key key, and whether the kind has it.
func (k *kindInfo) ownType(key string) (ownType, bool) {
	if k.own == nil {
		return 0, false
	}
	t, ok := k.own()[key]
	return t, ok
}

// ownKeys lists a kind's own and planned keys (did-you-mean candidates).
func (k *kindInfo) ownKeys() []string {
	var keys []string
	if k.own != nil {
		keys = slices.Collect(maps.Keys(k.own()))
	}
	keys = append(keys, k.Unsupported...)
	slices.Sort(keys)
	return keys
}

// ownTypes derives the own keys' shapes from the fields of a Keys struct.
func ownTypes(keys any) map[string]ownType {
	out := map[string]ownType{}
	t := reflect.TypeOf(keys).Elem()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Bool:
			out[name] = ownBool
		case ft.Kind() == reflect.Int:
			out[name] = ownInt
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
			out[name] = ownStringList
		default:
			out[name] = ownString
		}
	}
	return out
}

// guestPlannedKeys are QemuVM/Template keys of design §3 not implemented yet.
var guestPlannedKeys = []string{
	"image", "fromTemplate", "full", "ip", "gateway", "vlan", "sshKeys",
	"sshUser", "sshPort", "provision", "forceConfigCheck", "replace", "configDrive",
}

// kindTable returns the registry, built once; read-only.
var kindTable = sync.OnceValue(func() map[string]*kindInfo {
	rows := []*kindInfo{
		{
			Name: KindConnection,
			Role: roleConnection,
			Keys: (*Connection)(nil),
			// Required own keys.
			Required: []string{"url"},
		},
		{Name: KindDefaults, Role: roleDefaults},
		{
			Name:         KindQemuVM,
			Noun:         "VM",
			Create:       &apiCall{"POST", "/nodes/{node}/qemu"},
			Keys:         (*GuestKeys)(nil),
			Unsupported:  guestPlannedKeys,
			Identity:     "name",
			Unique:       []string{"vmid"},
			Identities:   guestIdentities("name", "VM name"),
			Hint:         "a VM without vmid is found by its name: give each a different vmid or name, or remove one",
			ValueAliases: map[string]map[string]string{"machine": {"i440fx": "pc"}},
			Check:        checkISODrives,
			Refs: []refRule{
				{Key: "pool", Values: paramValue("pool"), Kinds: []string{KindPool}, PresentOnly: true},
				{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindLinuxBridge}, SameNode: true, PresentOnly: true},
			},
		},
		{
			Name:       KindLxcContainer,
			Noun:       "container",
			Create:     &apiCall{"POST", "/nodes/{node}/lxc"},
			Keys:       (*GuestKeys)(nil),
			Identity:   "hostname",
			Unique:     []string{"vmid"},
			Identities: guestIdentities("hostname", "CT hostname"),
			Hint:       "a container without vmid is found by its hostname: give each a different vmid or hostname, or remove one",
			Refs: []refRule{
				{Key: "pool", Values: paramValue("pool"), Kinds: []string{KindPool}, PresentOnly: true},
				{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindLinuxBridge}, SameNode: true, PresentOnly: true},
			},
		},
		{
			Name:       KindLinuxBridge,
			Noun:       "bridge",
			Create:     &apiCall{"POST", "/nodes/{node}/network"},
			Identity:   "iface",
			Identities: ifaceIdentities,
			RefValue:   paramValueOf("iface"),
			Fixed:      map[string]string{"type": "bridge"},
		},
		{
			Name:       KindPool,
			Noun:       "pool",
			Create:     &apiCall{"POST", "/pools"},
			Identity:   "poolid",
			Identities: singleIdentity("poolid", "poolid"),
			RefValue:   paramValueOf("poolid"),
		},
		{
			Name:       KindNetworkApply,
			Noun:       "node's network commit",
			Create:     &apiCall{"PUT", "/nodes/{node}/network"},
			Params:     []string{"node"},
			Identity:   "node",
			Identities: singleIdentity("node", "node"),
			Hint:       "one NetworkApply per node is enough",
			// Absent interfaces too: their removal is staged and needs the commit.
			Refs: []refRule{{Key: "node", Kinds: []string{KindLinuxBridge}, SameNode: true, All: true}},
		},
		{
			Name:   KindNodeDns,
			Noun:   "node's DNS settings",
			Create: &apiCall{"PUT", "/nodes/{node}/dns"},
			// The node is the identity, defaulted from the document's name.
			Identity:   "node",
			Identities: singleIdentity("node", "node"),
			Hint:       "one NodeDns per node is enough",
		},
	}
	table := map[string]*kindInfo{}
	for _, k := range rows {
		if k.Keys != nil {
			k.own = sync.OnceValue(func() map[string]ownType { return ownTypes(k.Keys) })
		}
		table[k.Name] = k
	}
	return table
})

// kindOf returns a kind's row, or nil.
func kindOf(name string) *kindInfo { return kindTable()[name] }

// plannedKinds are the kinds of design §3 that this version does not
// implement yet.
var plannedKinds = []string{
	"Template", "Storage", "DownloadedImage", "ConfigDriveISO",
	"BondInterface", "User", "APIToken", "ACL",
}

// SupportedKinds lists the kinds this version of pvectl accepts, sorted.
func SupportedKinds() []string { return slices.Sorted(maps.Keys(kindTable())) }

func supportedList() string { return strings.Join(SupportedKinds(), ", ") }

func isPlannedKind(k string) bool { return slices.Contains(plannedKinds, k) }

// Noun names a kind's PVE object in messages ("VM", "bridge"); "object"
// for kinds without one.
func Noun(kind string) string {
	if k := kindOf(kind); k != nil && k.Noun != "" {
		return k.Noun
	}
	return "object"
}
