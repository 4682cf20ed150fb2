package spec

import (
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// infraRows returns the registry rows of a node's interfaces, volumes and DNS, pools, users, tokens, ACLs and storages (kindTable).
func infraRows() []*kindInfo {
	return []*kindInfo{
		linuxBridgeRow(),
		bondInterfaceRow(),
		poolRow(),
		networkApplyRow(),
		downloadedImageRow(),
		configDriveISORow(),
		nodeDnsRow(),
		userRow(),
		apiTokenRow(),
		aclRow(),
		storageRow(),
	}
}

// linuxBridgeRow returns the registry row of the LinuxBridge kind (bridge).
func linuxBridgeRow() *kindInfo {
	return &kindInfo{
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
	}
}

// bondInterfaceRow returns the registry row of the BondInterface kind (bond).
func bondInterfaceRow() *kindInfo {
	return &kindInfo{
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
	}
}

// poolRow returns the registry row of the Pool kind (pool).
func poolRow() *kindInfo {
	return &kindInfo{
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
	}
}

// networkApplyRow returns the registry row of the NetworkApply kind (node's network commit).
func networkApplyRow() *kindInfo {
	return &kindInfo{
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
	}
}

// downloadedImageRow returns the registry row of the DownloadedImage kind (downloaded file).
func downloadedImageRow() *kindInfo {
	return &kindInfo{
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
	}
}

// configDriveISORow returns the registry row of the ConfigDriveISO kind (config drive).
func configDriveISORow() *kindInfo {
	return &kindInfo{
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
	}
}

// nodeDnsRow returns the registry row of the NodeDns kind (node's DNS settings).
func nodeDnsRow() *kindInfo {
	return &kindInfo{
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
	}
}

// userRow returns the registry row of the User kind (user).
func userRow() *kindInfo {
	return &kindInfo{
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
	}
}

// apiTokenRow returns the registry row of the APIToken kind (API token).
func apiTokenRow() *kindInfo {
	return &kindInfo{
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
	}
}

// aclRow returns the registry row of the ACL kind (ACL grant).
func aclRow() *kindInfo {
	return &kindInfo{
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
	}
}

// storageRow returns the registry row of the Storage kind (storage).
func storageRow() *kindInfo {
	return &kindInfo{
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
	}
}
