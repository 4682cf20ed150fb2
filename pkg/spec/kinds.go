package spec

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Kind names. Only the registries (this file and its rows in kinds_*.go
// in spec, kind.go in the planner) name kinds; the rest of the code asks
// the kind's row.
const (
	KindConnection      = "Connection"
	KindDefaults        = "Defaults"
	KindQemuVM          = "QemuVM"
	KindTemplate        = "Template"
	KindPool            = "Pool"
	KindLinuxBridge     = "LinuxBridge"
	KindBondInterface   = "BondInterface"
	KindNetworkApply    = "NetworkApply"
	KindLxcContainer    = "LxcContainer"
	KindNodeDns         = "NodeDns"
	KindDownloadedImage = "DownloadedImage"
	KindConfigDriveISO  = "ConfigDriveISO"
	KindUser            = "User"
	KindAPIToken        = "APIToken"
	KindACL             = "ACL"
	KindStorage         = "Storage"
	KindRole            = "Role"
	KindGroup           = "Group"
	KindRealm           = "Realm"
	KindRealmSyncJob    = "RealmSyncJob"
	KindClusterOptions  = "ClusterOptions"
	KindMetricServer    = "MetricServer"

	KindHAResource     = "HAResource"
	KindHARule         = "HARule"
	KindBackupJob      = "BackupJob"
	KindReplicationJob = "ReplicationJob"

	KindFirewall      = "Firewall"
	KindSecurityGroup = "SecurityGroup"

	KindSdnZone       = "SdnZone"
	KindSdnVnet       = "SdnVnet"
	KindSdnSubnet     = "SdnSubnet"
	KindSdnController = "SdnController"
	KindSdnApply      = "SdnApply"

	KindHardwareMapping = "HardwareMapping"
)

// ownType is the YAML shape a pvectl-own key accepts; it follows from the
// Go type of the key's field in the kind's Keys struct.
type ownType int

const (
	ownString     ownType = iota // any non-null scalar, kept as written
	ownBool                      // true | false
	ownInt                       // an integer
	ownStringList                // a list of strings, or one comma-separated string
	ownStructure                 // a map or a list of maps, as the key documents (a Firewall's rules)
)

func (t ownType) String() string {
	switch t {
	case ownBool:
		return "a boolean (true or false)"
	case ownInt:
		return "an integer"
	case ownStringList:
		return "a list of strings (or one comma-separated string)"
	case ownStructure:
		return "a map or a list, as the key documents"
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
	// CallNote says how the calls' paths differ per object when one
	// spec key picks the API (a mapping's type), for explain.
	CallNote string
	// Params, when set, limits the accepted parameters of Create; read
	// it through params(). ParamsFrom derives them instead, on first use
	// (from the schema, which a plan file's reader need not load).
	Params     []string
	ParamsFrom func() []string
	// Update is the PVE call that changes an existing object, when it is
	// not found from Create (see updateCall in reference.go).
	Update *apiCall
	// Immutable kinds have no call that changes an existing object (a
	// downloaded file, an uploaded image): every key is create-only.
	Immutable bool
	// Renamable kinds can change their identity in place (a guest's name
	// or hostname is a config key): `renamedFrom` applies to them only.
	Renamable bool
	// Keys is the kind's struct of pvectl (camelCase) keys, as a nil
	// pointer of its type (e.g. (*GuestKeys)(nil)); its JSON field names
	// are the keys, its field types their shapes. nil: no own keys.
	Keys any
	// Unsupported are pvectl keys of the design that this version does not
	// implement yet: they get "not supported yet" rather than "unknown".
	Unsupported []string
	// Identity is the PVE parameter defaulted from the document's name.
	Identity string
	// Outputs are the values the kind's changes produce during apply,
	// that other resources name as ${Kind/name.output} (outputs.go); the
	// identity is one too, known from the spec.
	Outputs []OutputDoc
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
	// Filled are parameters the schema requires for Create that pvectl
	// supplies itself (an allocated vmid, the node's live search domain);
	// the node, the identity and Fixed parameters are always supplied.
	// Every other required parameter must be written (requiredProblems).
	Filled []string
	// FoundBy are required parameters of Create that the object is found
	// by: required even where nothing is created (state: absent).
	FoundBy []string
	// RequiredWhy says what a required parameter is, for its message.
	RequiredWhy map[string]string
	// Refused are parameters of Create that pvectl will not pass on, each
	// with the reason a document that sets one is told.
	Refused map[string]string
	// NotKeys are fields of Keys this kind does not take (a container has
	// no config drive).
	NotKeys []string
	// Check finds, offline, values PVE would refuse or not keep for this
	// kind (a bond option its mode drops, an ISO without media=cdrom), and
	// sets what follows from the keys (a config drive's file name); each
	// problem names the key it is about.
	Check func(r *Resource) []problem
	// Resolve settles what a resource takes from others of the specs (a
	// VM's config drive); find returns the resources of a kind that other
	// resources of r's connection name by value.
	Resolve func(r *Resource, find func(kind, value string) []*Resource) []problem

	// own caches the own keys' shapes, derived from Keys.
	own func() map[string]ownType
	// lazyParams caches ParamsFrom.
	lazyParams func() []string
}

// acceptsParam reports whether a PVE parameter may be written in the spec.
func (k *kindInfo) acceptsParam(name string) bool {
	params := k.params()
	return k.Create != nil && (params == nil || slices.Contains(params, name))
}

// params is Params, or what ParamsFrom derives (once).
func (k *kindInfo) params() []string {
	if k.lazyParams != nil {
		return k.lazyParams()
	}
	return k.Params
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
	for _, f := range keyFields(reflect.TypeOf(keys).Elem()) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
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
		case ft.Kind() == reflect.Map || ft.Kind() == reflect.Slice:
			out[name] = ownStructure
		default:
			out[name] = ownString
		}
	}
	return out
}

// keyFields are the spec-key fields of a Keys struct: those with a JSON
// name, the fields of embedded key sets (ProvisionKeys) included, and
// not those Load sets itself (tagged internal).
func keyFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, keyFields(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || f.Tag.Get("internal") != "" {
			continue
		}
		out = append(out, f)
	}
	return out
}

// qemuOnlyKeys are GuestKeys of the reference provider's VM conveniences,
// which a container does not take.
var qemuOnlyKeys = append([]string{"configDrive", "image", "full", "ip", "gateway", "vlan", "bridge", "sshKeys", "replace", "fromTemplate", "baseImage"}, ProvisionKeyNames...)

// templateNotKeys are the GuestKeys a Template does not take: the bake
// decides how it is made and that it ends stopped, and a template
// replaces nothing.
var templateNotKeys = []string{"image", "fromTemplate", "full", "running", "rebootOnPending", "replace", "configDrive"}

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
	}
	rows = append(rows, guestRows()...)
	rows = append(rows, infraRows()...)
	rows = append(rows, clusterRows()...)
	rows = append(rows, networkRows()...)
	table := map[string]*kindInfo{}
	for _, k := range rows {
		if k.Keys != nil {
			k.own = sync.OnceValue(func() map[string]ownType {
				own := ownTypes(k.Keys)
				for _, key := range k.NotKeys {
					delete(own, key)
				}
				return own
			})
		}
		if k.ParamsFrom != nil {
			k.lazyParams = sync.OnceValue(k.ParamsFrom)
		}
		table[k.Name] = k
	}
	return table
})

// nicOnBond refuses a guest NIC on a bond: PVE plugs a NIC into a bridge
// only, and the start fails on anything else (pve-common Network.pm
// tap_plug; qemu-server and pve-container start through it).
func nicOnBond(r, bond *Resource, v refValue) string {
	return fmt.Sprintf("%s: %s names %s, a bond: a guest's NIC plugs into a bridge only (PVE fails the start with \"bridge '%s' does not exist\"); name a %s whose bridge_ports include %s",
		r.Address(), v.Key, bond.Address(), v.Value, KindLinuxBridge, v.Value)
}

// bridgeInBridge refuses a bridge as another bridge's port: PVE's writer
// takes it, but the kernel does not enslave a bridge to a bridge (br_add_if
// refuses it) when the commit brings the bridge up.
func bridgeInBridge(r, br *Resource, v refValue) string {
	return fmt.Sprintf("%s: bridge_ports names %s, a bridge: Linux does not make a bridge the port of another bridge (the kernel refuses it when the commit brings the bridge up); use a bond, a NIC or a VLAN (%s.10) as the port",
		r.Address(), br.Address(), v.Value)
}

// guestKinds are the kinds a guest or guests key names (jobs.go), with
// the HA resource type PVE gives each (vm:<vmid>, ct:<vmid>).
var guestKinds = map[string]string{KindQemuVM: "vm", KindLxcContainer: "ct"}

// kindOf returns a kind's row, or nil.
func kindOf(name string) *kindInfo { return kindTable()[name] }

// plannedKinds are the kinds of design §3 that this version does not
// implement yet.
var plannedKinds = []string{}

// SupportedKinds lists the kinds this version of pvectl accepts, sorted.
func SupportedKinds() []string { return slices.Sorted(maps.Keys(kindTable())) }

func supportedList() string { return strings.Join(SupportedKinds(), ", ") }

func isPlannedKind(k string) bool { return slices.Contains(plannedKinds, k) }

// RunLockPool is the pool that apply and destroy create and delete as
// pvectl's run lock (pkg/runlock): no spec may manage it.
const RunLockPool = "pvectl-lock"

// checkPool refuses the run lock's pool: pvectl would overwrite its own
// lock's comment, or delete it under a running apply.
func checkPool(r *Resource) []problem {
	if r.Params.Get("poolid") != RunLockPool {
		return nil
	}
	return []problem{{"poolid", "the pool " + RunLockPool + " is pvectl's run lock, which apply and destroy create and delete: give this pool another poolid"}}
}

// RefValue is the value other resources name r by (a pool's poolid, a
// bridge's iface, a downloaded file's volume id); "" when its kind is not
// named by value.
func RefValue(r *Resource) string {
	if k := kindOf(r.Kind); k != nil && k.RefValue != nil {
		return k.RefValue(r)
	}
	return ""
}

// Noun names a kind's PVE object in messages ("VM", "bridge"); "object"
// for kinds without one.
func Noun(kind string) string {
	if k := kindOf(kind); k != nil && k.Noun != "" {
		return k.Noun
	}
	return "object"
}

// resolves runs several Resolve steps in turn.
func resolves(rs ...func(r *Resource, find func(kind, value string) []*Resource) []problem) func(r *Resource, find func(kind, value string) []*Resource) []problem {
	return func(r *Resource, find func(kind, value string) []*Resource) []problem {
		var out []problem
		for _, f := range rs {
			out = append(out, f(r, find)...)
		}
		return out
	}
}

// CloneSource is the address of the resource of the specs that r is
// cloned from (a QemuVM's fromTemplate: "Template/NAME"), or "".
func CloneSource(r *Resource) string {
	if n := fromTemplateName(r); n != "" {
		return KindTemplate + "/" + n
	}
	return ""
}
