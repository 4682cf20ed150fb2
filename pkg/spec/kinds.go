package spec

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Kind names. Only the registries (this file in spec, kind.go in the
// planner) name kinds; the rest of the code asks the kind's row.
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
	// Params, when set, limits the accepted parameters of Create.
	Params []string
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
		{
			Name:         KindQemuVM,
			Outputs:      guestOutputs("VM"),
			Noun:         "VM",
			Renamable:    true,
			Create:       &apiCall{"POST", "/nodes/{node}/qemu"},
			Filled:       []string{"vmid"}, // allocated by the planner when not written
			Keys:         (*GuestKeys)(nil),
			Identity:     "name",
			Unique:       []string{"vmid"},
			Identities:   guestIdentities("name", "VM name"),
			RefValue:     paramValueOf("vmid"), // an ACL path names a guest by vmid
			Hint:         "a VM without vmid is found by its name: give each a different vmid or name, or remove one",
			ValueAliases: map[string]map[string]string{"machine": {"i440fx": "pc"}},
			NotKeys:      []string{"baseImage"},
			Check:        checks(qemuConveniences, checkISODrives, checkProvision, checkNotTemplateProvision),
			Refs: []refRule{
				{Key: "pool", Values: paramValue("pool"), Kinds: []string{KindPool}, PresentOnly: true},
				{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindLinuxBridge}, SameNode: true, PresentOnly: true},
				{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindSdnVnet}, PresentOnly: true},
				{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindBondInterface}, SameNode: true, Refuse: nicOnBond},
				{Key: "configDrive", Values: configDriveRef, Kinds: []string{KindConfigDriveISO}, SameNode: true},
				{Key: "a drive's volume", Values: driveVolumes, Kinds: []string{KindDownloadedImage}, SameNode: true, PresentOnly: true},
				{Key: "volumes", Values: volumeStorages, Kinds: []string{KindStorage}, PresentOnly: true},
				// Absent templates too: resolveFromTemplate refuses them.
				{Key: "fromTemplate", Values: fromTemplateRef, Kinds: []string{KindTemplate}},
				{Key: "a mapped device", Values: guestMappingRefs, Kinds: []string{KindHardwareMapping}, PresentOnly: true, Refuse: mappingWithoutNode},
			},
			Resolve: resolves(attachConfigDrive(KindConfigDriveISO), resolveFromTemplate(KindTemplate)),
		},
		{
			// A golden image (design §4): a QEMU template baked from
			// baseImage (clone, boot, provision, shut down, POST
			// …/template) and rebuilt when its recipe changes.
			Name:         KindTemplate,
			Outputs:      guestOutputs("template"),
			Noun:         "template",
			Create:       &apiCall{"POST", "/nodes/{node}/qemu"},
			Filled:       []string{"vmid"},
			Keys:         (*GuestKeys)(nil),
			NotKeys:      templateNotKeys,
			Identity:     "name",
			Unique:       []string{"vmid"},
			Identities:   guestIdentities("name", "VM name"),
			RefValue:     func(r *Resource) string { return r.Name },
			Hint:         "a template is found by its name: give each a different name, or remove one",
			Fixed:        map[string]string{"template": "1"},
			Required:     []string{"baseImage"},
			ValueAliases: map[string]map[string]string{"machine": {"i440fx": "pc"}},
			Check:        checks(checkTemplate, qemuConveniences, checkISODrives, checkProvision),
			Refs: []refRule{
				{Key: "pool", Values: paramValue("pool"), Kinds: []string{KindPool}, PresentOnly: true},
				{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindLinuxBridge}, SameNode: true, PresentOnly: true},
				{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindSdnVnet}, PresentOnly: true},
				{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindBondInterface}, SameNode: true, Refuse: nicOnBond},
				{Key: "a drive's volume", Values: driveVolumes, Kinds: []string{KindDownloadedImage}, SameNode: true, PresentOnly: true},
				{Key: "volumes", Values: volumeStorages, Kinds: []string{KindStorage}, PresentOnly: true},
				{Key: "a mapped device", Values: guestMappingRefs, Kinds: []string{KindHardwareMapping}, PresentOnly: true, Refuse: mappingWithoutNode},
			},
		},
		{
			Name:      KindLxcContainer,
			Outputs:   guestOutputs("container"),
			Noun:      "container",
			Renamable: true,
			Create:    &apiCall{"POST", "/nodes/{node}/lxc"},
			Filled:    []string{"vmid"},
			RequiredWhy: map[string]string{"ostemplate": "the template the container is made from, e.g. local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst " +
				"(PVE does not record it: write it for a container that exists too)"},
			Keys:       (*GuestKeys)(nil),
			Identity:   "hostname",
			Unique:     []string{"vmid"},
			Identities: guestIdentities("hostname", "CT hostname"),
			RefValue:   paramValueOf("vmid"),
			Hint:       "a container without vmid is found by its hostname: give each a different vmid or hostname, or remove one",
			NotKeys:    qemuOnlyKeys,
			Refs: []refRule{
				{Key: "pool", Values: paramValue("pool"), Kinds: []string{KindPool}, PresentOnly: true},
				{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindLinuxBridge}, SameNode: true, PresentOnly: true},
				{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindSdnVnet}, PresentOnly: true},
				{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindBondInterface}, SameNode: true, Refuse: nicOnBond},
				{Key: "ostemplate", Values: paramValue("ostemplate"), Kinds: []string{KindDownloadedImage}, SameNode: true, PresentOnly: true},
				{Key: "volumes", Values: volumeStorages, Kinds: []string{KindStorage}, PresentOnly: true},
			},
		},
		{
			Name:       KindLinuxBridge,
			Noun:       "bridge",
			Create:     &apiCall{"POST", "/nodes/{node}/network"},
			Params:     append(ifaceParams(), "bridge_ports", "bridge_vlan_aware", "bridge_vids"),
			Identity:   "iface",
			Identities: ifaceIdentities("bridge_ports"),
			RefValue:   paramValueOf("iface"),
			Fixed:      map[string]string{"type": "bridge"},
			Refs: []refRule{
				// Absent bonds too: when both go, the bridge goes first.
				{Key: "bridge_ports", Values: listValues("bridge_ports"), Kinds: []string{KindBondInterface}, SameNode: true},
				{Key: "bridge_ports", Values: listValues("bridge_ports"), Kinds: []string{KindLinuxBridge}, SameNode: true, Refuse: bridgeInBridge},
			},
			Check: checkBridge,
		},
		{
			Name:       KindBondInterface,
			Noun:       "bond",
			Create:     &apiCall{"POST", "/nodes/{node}/network"},
			Params:     append(ifaceParams(), "slaves", "bond_mode", "bond-primary", "bond_xmit_hash_policy"),
			Identity:   "iface",
			Identities: ifaceIdentities("slaves"),
			RefValue:   paramValueOf("iface"),
			Fixed:      map[string]string{"type": "bond"},
			// A bond of bonds: PVE's writer takes a bond as a slave.
			Refs:  []refRule{{Key: "slaves", Values: listValues("slaves"), Kinds: []string{KindBondInterface}, SameNode: true}},
			Check: checkBond,
		},
		{
			Name:       KindPool,
			Noun:       "pool",
			Create:     &apiCall{"POST", "/pools"},
			Update:     &apiCall{"PUT", "/pools"},
			Keys:       (*PoolKeys)(nil),
			Identity:   "poolid",
			Identities: singleIdentity("poolid", "poolid"),
			RefValue:   paramValueOf("poolid"),
			Refs: []refRule{
				{Key: "storages", Values: poolStorages, Kinds: []string{KindStorage}, PresentOnly: true},
			},
			Check: checkPool,
		},
		{
			Name:       KindNetworkApply,
			Noun:       "node's network commit",
			Create:     &apiCall{"PUT", "/nodes/{node}/network"},
			Params:     []string{"node"},
			Keys:       (*NetworkApplyKeys)(nil),
			Identity:   "node",
			Identities: singleIdentity("node", "node"),
			Hint:       "one NetworkApply per node is enough",
			// Absent interfaces too: their removal is staged and needs the commit.
			Refs: []refRule{{Key: "node", Kinds: []string{KindLinuxBridge, KindBondInterface}, SameNode: true, All: true}},
		},
		{
			Name:      KindDownloadedImage,
			Outputs:   []OutputDoc{{Name: "volid", Sample: "local:iso/image.iso", Doc: "the volume id of the downloaded file (storage:content/filename)"}},
			Immutable: true,
			Noun:      "downloaded file",
			Create:    &apiCall{"POST", "/nodes/{node}/storage/{storage}/download-url"},
			FoundBy:   []string{"storage", "content"},
			RequiredWhy: map[string]string{
				"storage": "the storage the file is downloaded to",
				"content": "iso, vztmpl or import",
				"url":     "where the node downloads the file from",
			},
			// The file name is the identity, defaulted from the document's
			// name; storage and content complete it.
			Identity:   "filename",
			Identities: volumeIdentities,
			Hint:       "two documents would download into one file: give each its own filename, storage or node",
			RefValue:   downloadVolid,
			Check:      checkDownload,
			// Not yet a dependency: the Storage named by storage (a Refs
			// rule on "storage" once that kind has its row).
		},
		{
			Name:      KindConfigDriveISO,
			Outputs:   []OutputDoc{{Name: "volid", Sample: "local:iso/seed-0123456789.iso", Doc: "the volume id of the ISO (storage:iso/<name>-<hash>.iso): it changes with the content"}},
			Immutable: true,
			Noun:      "config drive",
			// pvectl builds the image and uploads it; only where it goes
			// passes through. filename is derived (<name>-<hash>.iso).
			Create:      &apiCall{"POST", "/nodes/{node}/storage/{storage}/upload"},
			Params:      []string{"node", "storage"},
			FoundBy:     []string{"storage"},
			RequiredWhy: map[string]string{"storage": "the storage the image is uploaded to (one that holds iso content)"},
			Keys:        (*ConfigDriveKeys)(nil),
			Check:       buildConfigDrive,
			RefValue:    func(r *Resource) string { return r.Name },
		},
		{
			Name:   KindNodeDns,
			Noun:   "node's DNS settings",
			Create: &apiCall{"PUT", "/nodes/{node}/dns"},
			// PVE rewrites resolv.conf from the call: the planner sends
			// the live search domain when the spec has none (desiredDNS).
			Filled: []string{"search"},
			// The node is the identity, defaulted from the document's name.
			Identity:   "node",
			Identities: singleIdentity("node", "node"),
			Hint:       "one NodeDns per node is enough",
		},
		{
			Name:       KindUser,
			Noun:       "user",
			Create:     &apiCall{"POST", "/access/users"},
			Identity:   "userid",
			Identities: singleIdentity("userid", "userid"),
			RefValue:   paramValueOf("userid"),
			Refused:    map[string]string{"password": passwordRefusal},
			Refs: []refRule{
				{Key: "groups", Values: listValues("groups"), Kinds: []string{KindGroup}, PresentOnly: true},
				{Key: "userid", Values: realmOfUser("userid"), Kinds: []string{KindRealm}, PresentOnly: true},
			},
		},
		{
			Name:        KindAPIToken,
			Outputs:     []OutputDoc{{Name: "tokenid", Sample: "user@pve!token", Doc: "the full token id, user@realm!name"}},
			Noun:        "API token",
			Create:      &apiCall{"POST", "/access/users/{userid}/token/{tokenid}"},
			FoundBy:     []string{"userid"},
			RequiredWhy: map[string]string{"userid": "the user (user@realm) the token belongs to"},
			Keys:        (*TokenKeys)(nil),
			Identity:    "tokenid",
			Identities:  tokenIdentities,
			Hint:        "a token is found by its userid and tokenid: give each a different tokenid, or remove one",
			RefValue:    tokenRef,
			Refs: []refRule{
				{Key: "userid", Values: paramValue("userid"), Kinds: []string{KindUser}, PresentOnly: true},
			},
			Check: collect(checkToken),
		},
		{
			Name:    KindACL,
			Noun:    "ACL grant",
			Create:  &apiCall{"PUT", "/access/acl"},
			Params:  []string{"path", "users", "groups", "tokens", "roles", "propagate"},
			FoundBy: []string{"path", "roles"},
			RequiredWhy: map[string]string{
				"path":  "the ACL path to grant on (/, /vms/100, /pool/lab, /storage/local …)",
				"roles": "the role to grant (PVEVMAdmin, PVEAuditor, …)",
			},
			// No identity key: PVE has no ids for ACL entries, a grant is
			// known by what it grants (aclIdentities).
			Identities: aclIdentities,
			Hint:       "one ACL resource is one grant (path, principal, role): write each grant once",
			Refs: []refRule{
				{Key: "users", Values: paramValue("users"), Kinds: []string{KindUser}, PresentOnly: true},
				{Key: "tokens", Values: paramValue("tokens"), Kinds: []string{KindAPIToken}, PresentOnly: true},
				{Key: "tokens", Values: tokenUser, Kinds: []string{KindUser}, PresentOnly: true},
				{Key: "path", Values: aclPathObject("/pool/"), Kinds: []string{KindPool}, PresentOnly: true},
				{Key: "path", Values: aclPathObject("/vms/"), Kinds: []string{KindQemuVM, KindLxcContainer}, PresentOnly: true},
				{Key: "groups", Values: listValues("groups"), Kinds: []string{KindGroup}, PresentOnly: true},
				{Key: "roles", Values: listValues("roles"), Kinds: []string{KindRole}, PresentOnly: true},
			},
			Check: collect(checkACL),
		},
		{
			Name:        KindStorage,
			Noun:        "storage",
			Create:      &apiCall{"POST", "/storage"},
			RequiredWhy: map[string]string{"type": "one of " + strings.Join(schema.StorageTypeNames(), ", ")},
			// The storage ID is the identity, defaulted from the document's name.
			Identity:   "storage",
			Identities: singleIdentity("storage", "storage"),
			Hint:       "a storage ID names one storage.cfg entry: give each a different storage, or remove one",
			RefValue:   paramValueOf("storage"),
			Check:      checkStorage,
		},
		{
			Name:       KindRole,
			Noun:       "role",
			Create:     &apiCall{"POST", "/access/roles"},
			Identity:   "roleid",
			Identities: singleIdentity("roleid", "roleid"),
			RefValue:   paramValueOf("roleid"),
			Check:      collect(checkRole),
		},
		{
			Name:       KindGroup,
			Noun:       "group",
			Create:     &apiCall{"POST", "/access/groups"},
			Identity:   "groupid",
			Identities: singleIdentity("groupid", "groupid"),
			RefValue:   paramValueOf("groupid"),
		},
		{
			Name:        KindRealm,
			Noun:        "realm",
			Create:      &apiCall{"POST", "/access/domains"},
			Update:      &apiCall{"PUT", "/access/domains/{realm}"},
			Params:      realmParams(),
			Keys:        (*SecretKeys)(nil),
			RequiredWhy: map[string]string{"type": "ldap, ad or openid"},
			Identity:    "realm",
			Identities:  singleIdentity("realm", "realm"),
			RefValue:    paramValueOf("realm"),
			Check:       collect(checkRealm),
		},
		{
			Name:        KindRealmSyncJob,
			Noun:        "realm sync job",
			Create:      &apiCall{"POST", "/cluster/jobs/realm-sync/{id}"},
			RequiredWhy: map[string]string{"schedule": "when to sync, a PVE calendar event (daily, sat 02:00 …)"},
			Identity:    "id",
			Identities:  singleIdentity("id", "job id"),
			Refs:        []refRule{{Key: "realm", Values: paramValue("realm"), Kinds: []string{KindRealm}}},
			Check:       collect(checkRealmSync),
		},
		{
			Name:       KindClusterOptions,
			Noun:       "cluster options",
			Create:     &apiCall{"PUT", "/cluster/options"},
			Identities: clusterOptionsIdentity,
			Hint:       "the cluster has one set of options: write one ClusterOptions per connection",
			Refused:    map[string]string{"delete": "pvectl sends delete itself: write a key as null to delete it (key: null), or drop a key pvectl wrote"},
		},
		{
			Name:       KindMetricServer,
			Noun:       "metric server",
			Create:     &apiCall{"POST", "/cluster/metrics/server/{id}"},
			Keys:       (*SecretKeys)(nil),
			Identity:   "id",
			Identities: singleIdentity("id", "metric server id"),
			Check:      collect(checkSecretUpdate),
		},
		{
			// pve-ha-manager API2/HA/Resources.pm; the guest is the
			// identity (sid vm:<vmid>).
			Name:       KindHAResource,
			Noun:       "HA resource",
			Create:     &apiCall{"POST", "/cluster/ha/resources"},
			Params:     []string{"sid", "state", "failback", "max_restart", "max_relocate", "comment"},
			Filled:     []string{"sid"}, // from guest (checkHAResource)
			Keys:       (*HAResourceKeys)(nil),
			Identities: singleIdentity("sid", "HA resource"),
			Hint:       "a guest has one HA resource: write it once",
			RefValue:   paramValueOf("sid"),
			Check:      collect(checkHAResource),
		},
		{
			// pve-ha-manager API2/HA/Rules.pm (PVE 9): the document's
			// name is the rule id.
			Name:        KindHARule,
			Noun:        "HA rule",
			Create:      &apiCall{"POST", "/cluster/ha/rules"},
			Filled:      []string{"resources"}, // from guests (checkHARule)
			Keys:        (*HARuleKeys)(nil),
			Identity:    "rule",
			Identities:  singleIdentity("rule", "HA rule"),
			Hint:        "a rule id names one rule: give each a different name",
			RequiredWhy: map[string]string{"type": "node-affinity (with nodes) or resource-affinity (with affinity)"},
			Refs: []refRule{
				{Key: "guests", Values: listValues("resources"), Kinds: []string{KindHAResource}, PresentOnly: true},
			},
			Check: collect(checkHARule),
		},
		{
			// pve-manager API2/Backup.pm (jobs.cfg): the document's name
			// is the job id.
			Name:       KindBackupJob,
			Noun:       "backup job",
			Create:     &apiCall{"POST", "/cluster/backup"},
			Keys:       (*BackupJobKeys)(nil),
			Identity:   "id",
			Identities: singleIdentity("id", "backup job"),
			Hint:       "a job id names one backup job: give each a different name",
			Refused: map[string]string{
				"starttime": "the old form of schedule: write schedule (e.g. \"mon..fri 21:00\")",
				"dow":       "the old form of schedule: write schedule (e.g. \"mon..fri 21:00\")",
				"tmpdir":    "only root@pam may set it, and pvectl talks to PVE with an API token",
				"dumpdir":   "only root@pam may set it, and pvectl talks to PVE with an API token",
				"script":    "only root@pam may set it, and pvectl talks to PVE with an API token",
			},
			Refs: []refRule{
				{Key: "storage", Values: paramValue("storage"), Kinds: []string{KindStorage}, PresentOnly: true},
				{Key: "pool", Values: paramValue("pool"), Kinds: []string{KindPool}, PresentOnly: true},
			},
			Check: collect(checkBackupJob),
		},
		{
			// pve-manager API2/ReplicationConfig.pm: identity guest +
			// target; the job id <vmid>-<n> is pvectl's choice.
			Name:        KindReplicationJob,
			Noun:        "replication job",
			Create:      &apiCall{"POST", "/cluster/replication"},
			Params:      []string{"id", "target", "schedule", "rate", "comment", "disable"},
			Filled:      []string{"id"},
			FoundBy:     []string{"target"},
			RequiredWhy: map[string]string{"target": "the node the guest's volumes replicate to"},
			Fixed:       map[string]string{"type": "local"},
			Keys:        (*ReplicationJobKeys)(nil),
			Identities:  replicationIdentities,
			Hint:        "PVE keeps one replication job per guest and target: write it once",
			Check:       collect(checkReplicationJob),
		},
		{
			// The whole firewall of one scope (issue 20): no one PVE call
			// takes it, so every key is pvectl's; rules, options and
			// entries are checked as PVE's parameters (firewall.go).
			Name:       KindFirewall,
			Noun:       "firewall",
			Keys:       (*FirewallKeys)(nil),
			Required:   []string{"scope"},
			Identities: firewallIdentities,
			RefValue:   firewallRefValue,
			Hint:       "one Firewall document per scope: merge the two",
			Check:      checkFirewall(map[string]string{KindQemuVM: FirewallQemu, KindLxcContainer: FirewallLxc, KindSdnVnet: FirewallVnet}),
			Refs: []refRule{
				{Key: "rules", Values: ruleGroups, Kinds: []string{KindSecurityGroup}, PresentOnly: true, Skip: GroupUsesFirewallSets},
				{Key: "scope", Values: clusterFirewallRef, Kinds: []string{KindFirewall}, PresentOnly: true},
				{Key: "scope", Values: vnetScopeRef, Kinds: []string{KindSdnVnet}, PresentOnly: true},
			},
		},
		{
			Name:   KindSecurityGroup,
			Noun:   "security group",
			Create: &apiCall{"POST", "/cluster/firewall/groups"},
			// The same call changes the comment (Groups.pm: an existing
			// group with rename=group).
			Update:     &apiCall{"POST", "/cluster/firewall/groups"},
			Params:     []string{"group", "comment"},
			Keys:       (*SecurityGroupKeys)(nil),
			Identity:   "group",
			Identities: singleIdentity("group", "security group"),
			RefValue:   paramValueOf("group"),
			Hint:       "a security group is found by its name: give each a different group, or remove one",
			Check:      checkSecurityGroup,
			Refs: []refRule{
				{Key: "rules", Values: ruleSetUsers, Kinds: []string{KindFirewall}, PresentOnly: true, Skip: usesNoSetOf},
			},
		},
		{
			// pve-network src/PVE/API2/Network/SDN/Zones.pm: the document's
			// name is the zone id.
			Name:        KindSdnZone,
			Noun:        "SDN zone",
			Create:      &apiCall{"POST", "/cluster/sdn/zones"},
			Identity:    "zone",
			Identities:  singleIdentity("zone", "SDN zone"),
			RefValue:    paramValueOf("zone"),
			Hint:        "a zone id names one SDN zone: give each a different name",
			RequiredWhy: map[string]string{"type": "simple, vlan, qinq, vxlan or evpn"},
			Refused:     sdnLockRefused,
			Refs: []refRule{
				{Key: "controller", Values: paramValue("controller"), Kinds: []string{KindSdnController}, PresentOnly: true},
			},
			Check: collect(checkSdnZone),
		},

		{
			// Vnets.pm: the document's name is the vnet id, which guests'
			// NICs name as their bridge.
			Name:       KindSdnVnet,
			Noun:       "SDN vnet",
			Create:     &apiCall{"POST", "/cluster/sdn/vnets"},
			Identity:   "vnet",
			Identities: singleIdentity("vnet", "SDN vnet"),
			RefValue:   paramValueOf("vnet"),
			Hint:       "a vnet id names one vnet: give each a different name",
			Fixed:      map[string]string{"type": "vnet"},
			Refused:    sdnLockRefused,
			Refs: []refRule{
				{Key: "zone", Values: paramValue("zone"), Kinds: []string{KindSdnZone}, PresentOnly: true},
			},
			Resolve: checkVnetInZone(KindSdnZone),
		},

		{
			// Subnets.pm: found by its vnet and CIDR (PVE's id is
			// <zone>-<network>-<mask>, after the vnet's zone).
			Name:        KindSdnSubnet,
			Noun:        "SDN subnet",
			Create:      &apiCall{"POST", "/cluster/sdn/vnets/{vnet}/subnets"},
			Fixed:       map[string]string{"type": "subnet"},
			FoundBy:     []string{"vnet", "subnet"},
			RequiredWhy: map[string]string{"vnet": "the vnet the subnet is on", "subnet": "the subnet's CIDR (10.0.0.0/24)"},
			Identities:  subnetIdentities,
			RefValue:    paramValueOf("vnet"),
			Hint:        "a vnet has a CIDR once: merge the two subnets",
			Refused:     sdnLockRefused,
			Refs: []refRule{
				{Key: "vnet", Values: paramValue("vnet"), Kinds: []string{KindSdnVnet}, PresentOnly: true},
			},
			Check:   collect(checkSdnSubnet),
			Resolve: checkSubnetInVnet(KindSdnVnet, KindSdnSubnet),
		},

		{
			// Controllers.pm: evpn, bgp and isis controllers (faucet is not
			// offered by PVE's GUI and left out of the issue).
			Name:        KindSdnController,
			Noun:        "SDN controller",
			Create:      &apiCall{"POST", "/cluster/sdn/controllers"},
			Identity:    "controller",
			Identities:  singleIdentity("controller", "SDN controller"),
			RefValue:    paramValueOf("controller"),
			Hint:        "a controller id names one SDN controller: give each a different name",
			RequiredWhy: map[string]string{"type": "evpn, bgp or isis"},
			Refused:     sdnLockRefused,
			Check:       collect(checkSdnController),
		},

		{
			// SDN.pm reload: commits the pending SDN configuration of the
			// whole cluster; pvectl sends the lock token itself.
			Name: KindSdnApply,
			Noun: "SDN commit",
			// No spec keys: the commit's parameters are the lock's, which
			// pvectl sends itself (PUT /cluster/sdn).
			Identities: func(r *Resource) []identity { return []identity{{ns: r.Kind, key: "SDN commit", what: "kind"}} },
			Hint:       "SDN is committed cluster-wide: write one SdnApply per connection",
			// Absent ones too: their removal is pending and needs the commit.
			Refs: []refRule{{Key: "sdn", Kinds: []string{KindSdnZone, KindSdnVnet, KindSdnSubnet, KindSdnController}, All: true}},
		},
		{
			// pve-manager API2/Cluster/Mapping/{PCI,USB,Dir}.pm: the
			// document's name is the mapping id; type picks the API. The
			// create call named is the PCI one, whose options are a
			// superset (checkHardwareMapping refuses mdev and
			// live-migration-capable elsewhere).
			Name:       KindHardwareMapping,
			Noun:       "hardware mapping",
			Create:     &apiCall{"POST", "/cluster/mapping/pci"},
			Params:     []string{"id", "description", "mdev", "live-migration-capable"},
			Keys:       (*HardwareMappingKeys)(nil),
			Required:   []string{"type"},
			Identity:   "id",
			Identities: mappingIdentities,
			Hint:       "a mapping id names one mapping of its type: give each a different name",
			RefValue:   mappingRefValue,
			Check:      collect(checkHardwareMapping),
		},
	}
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
// pvectl's run lock (pkg/planner runlock.go): no spec may manage it.
const RunLockPool = "pvectl-lock"

// checkPool refuses the run lock's pool: pvectl would overwrite its own
// lock's comment, or delete it under a running apply.
func checkPool(r *Resource) []problem {
	if r.Params["poolid"] != RunLockPool {
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
