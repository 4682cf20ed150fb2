package spec

import (
	"maps"
	"slices"
	"sort"
	"strings"
)

// ownType is the YAML shape a pvectl-own key accepts.
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

// kindInfo is one row of the kind registry: everything Load needs to turn a
// document of that kind into a Resource. A new kind is a new row.
type kindInfo struct {
	Name string
	// Create is the PVE call that creates the kind: its parameters are the
	// spec keys passed through verbatim. nil for kinds with own keys only.
	Create *apiCall
	// Params, when set, limits the accepted parameters of Create.
	Params []string
	// Own are pvectl's camelCase keys and their shapes.
	Own map[string]ownType
	// Unsupported are pvectl keys of the design that this version does not
	// implement yet: they get "not supported yet" rather than "unknown".
	Unsupported []string
	// Identity is the PVE parameter defaulted from the document's name.
	Identity string
	// Unique are other parameters that identify a resource when set (a
	// QemuVM's vmid): no two resources may share one, so Defaults cannot
	// set them.
	Unique []string
	// Fixed are parameters whose value the kind decides.
	Fixed map[string]string
	// ValueAliases map friendlier values to PVE's, per parameter.
	ValueAliases map[string]map[string]string
	// Required are own keys a document must set.
	Required []string
	// Managed kinds become Resources; the others (Connection, Defaults)
	// only configure Load.
	Managed bool
}

// acceptsParam reports whether a PVE parameter may be written in the spec.
func (k *kindInfo) acceptsParam(name string) bool {
	if k.Create == nil {
		return false
	}
	if k.Params == nil {
		return true
	}
	for _, p := range k.Params {
		if p == name {
			return true
		}
	}
	return false
}

func (k *kindInfo) unsupported(key string) bool {
	for _, u := range k.Unsupported {
		if u == key {
			return true
		}
	}
	return false
}

// qemuPlannedKeys are QemuVM/Template keys of design §3 not implemented yet.
var qemuPlannedKeys = []string{
	"image", "fromTemplate", "full", "ip", "gateway", "vlan", "sshKeys",
	"sshUser", "sshPort", "provision", "forceConfigCheck", "replace", "configDrive",
}

// kindTable is the registry. It is read-only after initialisation.
var kindTable = map[string]*kindInfo{
	KindConnection: {
		Name: KindConnection,
		Own: map[string]ownType{
			"url": ownString, "tokenId": ownString, "user": ownString,
			"tokenName": ownString, "tokenSecret": ownString, "nodes": ownStringList,
			"dnsDomain": ownString, "dnsServers": ownStringList, "sshUser": ownString,
			"sshPrivateKey": ownString, "insecure": ownBool, "tlsFingerprint": ownString,
			"caFile": ownString,
		},
		Required: []string{"url"},
	},
	KindDefaults: {Name: KindDefaults},
	KindQemuVM: {
		Name:         KindQemuVM,
		Create:       &apiCall{"POST", "/nodes/{node}/qemu"},
		Own:          map[string]ownType{"running": ownBool},
		Unsupported:  qemuPlannedKeys,
		Identity:     "name",
		Unique:       []string{"vmid"},
		ValueAliases: map[string]map[string]string{"machine": {"i440fx": "pc"}},
		Managed:      true,
	},
	KindLinuxBridge: {
		Name:     KindLinuxBridge,
		Create:   &apiCall{"POST", "/nodes/{node}/network"},
		Identity: "iface",
		Fixed:    map[string]string{"type": "bridge"},
		Managed:  true,
	},
	KindPool: {
		Name:     KindPool,
		Create:   &apiCall{"POST", "/pools"},
		Identity: "poolid",
		Managed:  true,
	},
	KindNetworkApply: {
		Name:     KindNetworkApply,
		Create:   &apiCall{"PUT", "/nodes/{node}/network"},
		Params:   []string{"node"},
		Identity: "node",
		Managed:  true,
	},
}

// plannedKinds are the kinds of design §3 that this version does not
// implement yet.
var plannedKinds = []string{
	"Template", "LxcContainer", "Storage", "DownloadedImage", "ConfigDriveISO",
	"BondInterface", "NodeDns", "User", "APIToken", "ACL",
}

// SupportedKinds lists the kinds this version of pvectl accepts, sorted.
func SupportedKinds() []string { return slices.Sorted(maps.Keys(kindTable)) }

func supportedList() string { return strings.Join(SupportedKinds(), ", ") }

func isPlannedKind(k string) bool {
	for _, p := range plannedKinds {
		if p == k {
			return true
		}
	}
	return false
}

// ownKeys lists a kind's own and planned keys (did-you-mean candidates).
func (k *kindInfo) ownKeys() []string {
	keys := slices.Sorted(maps.Keys(k.Own))
	keys = append(keys, k.Unsupported...)
	sort.Strings(keys)
	return keys
}
