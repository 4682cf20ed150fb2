package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// GuestKeys are the pvectl keys of the guest kinds (QemuVM, LxcContainer).
// A nil pointer field is a key the spec does not set. The `doc` tag is the
// key's description in `pvectl explain` and the JSON Schema.
type GuestKeys struct {
	// Running is the power state to reconcile.
	Running *bool `json:"running,omitempty" doc:"The power state to reconcile: true starts the guest (after create too), false shuts it down (a hard stop after 3m0s). Absent: the power state is not managed."`
	// RebootOnPending reboots a running guest whose config changes PVE
	// keeps pending until the next start, so that they apply.
	// SnapshotBeforeChange takes a PVE snapshot of the guest right
	// before a change that touches its disks or reboots it (as
	// `apply --snapshot` does for every guest).
	SnapshotBeforeChange *bool `json:"snapshotBeforeChange,omitempty" doc:"Take a PVE snapshot named pvectl-<time> of the guest right before a change that touches its disks or reboots it, as apply --snapshot does for every guest; the plan says so, the last --keep-snapshots of them are kept, and a failed change prints the rollback command. A guest whose volumes cannot be snapshotted (raw files on a directory storage, thick LVM) is named in the plan and changed without one."`
	RebootOnPending      *bool `json:"rebootOnPending,omitempty" doc:"Reboot a running guest when changes stay pending until its next start (PVE cannot hot-plug them, e.g. cores or a new IDE disk), and wait until it runs again with nothing pending; also reboots for changes left pending by an earlier run. Default false: the plan and apply say what is pending until reboot, and nothing reboots."`
	// ConfigDrive names a ConfigDriveISO of the specs that the VM gets as
	// a CD-ROM (QemuVM only): Load writes the drive into Params
	// (ConfigDriveSlot).
	ConfigDrive *string `json:"configDrive,omitempty" doc:"A ConfigDriveISO of these specs (its document name) attached as a CD-ROM at ide3 with media=cdrom; a new version of the drive re-points the VM (QemuVM only)."`

	// The reference provider's conveniences (QemuVM only). Load turns
	// ip/gateway, vlan/bridge and sshKeys into PVE keys (qemuconv.go);
	// image, full and replace steer the create; sshUser and sshPort are
	// kept for provisioning.
	Image   *string  `json:"image,omitempty" doc:"Clone an existing PVE template: its VMID as a numeric string (\"9000\"), or a substring of its name that only one template has (a template named exactly so wins). No match or several are a plan error listing the candidates. Then the spec's keys are applied to the clone in one config update; the clone is started unless running: false. Only read when the VM is created."`
	Full    *bool    `json:"full,omitempty" doc:"With image: a full clone (default true: the VM does not depend on its template); false makes a linked clone, for which PVE refuses storage."`
	IP      *string  `json:"ip,omitempty" doc:"Static IPv4 address of the first NIC, A.B.C.D or A.B.C.D/NN (/24 when no prefix is given), written as cloud-init ipconfig0 with a gateway; dhcp for DHCP. Without it (and without ipconfig0) a VM cloned from an image gets the address DNS holds for NAME.dnsDomain (the connection's dnsServers, asked at plan time), else DHCP."`
	Gateway *string  `json:"gateway,omitempty" doc:"The IPv4 gateway of ipconfig0 (default: the first three octets of the address and .1)."`
	VLAN    *int     `json:"vlan,omitempty" doc:"VLAN tag (1-4094) of the first NIC (net0 tag=), on bridge (default vmbr1)."`
	Bridge  *string  `json:"bridge,omitempty" doc:"The bridge of the first NIC (net0 bridge=); default vmbr1 when vlan is set."`
	SSHKeys []string `json:"sshKeys,omitempty" doc:"SSH public keys (OpenSSH format, one per item) for cloud-init's sshkeys, URL-encoded as PVE requires. A Defaults list is replaced, not extended, by a resource's own."`
	Replace *string  `json:"replace,omitempty" doc:"An existing VM (its name or vmid) that is not in these specs: destroyed once this VM is up (created, configured, started) and provisioned. Nothing happens when it does not exist."`

	// Golden templates (design §4). FromTemplate names a Template of the
	// specs that a QemuVM clones (an implicit dependency); BaseImage is
	// the PVE template a Template is baked from (Template only).
	FromTemplate *string `json:"fromTemplate,omitempty" doc:"Clone a Template of these specs (its document name): the VM waits for the template to be baked (an implicit dependency) and is then cloned from it as with image (full unless full: false), in parallel with the other VMs of that template. Only read when the VM is created. Not with image."`
	BaseImage    *string `json:"baseImage,omitempty" doc:"The PVE template this Template is baked from: its VMID as a numeric string, or a substring of its name that only one template has (as QemuVM image). A change rebuilds the template."`

	// ProvisionKeys are the provisioning keys (QemuVM and Template).
	ProvisionKeys
}

// Clones reports whether the guest is made by cloning a template (image,
// fromTemplate, or a Template's baseImage).
func (g *GuestKeys) Clones() bool {
	return g.Image != nil || g.FromTemplate != nil || g.BaseImage != nil
}

// ProvisionKeys are the keys of hash-tracked provisioning (design §4,
// docs/provisioning.md): a kind that provisions its guests (QemuVM,
// Template) embeds them in its Keys struct and lists ProvisionKeyNames
// among its own keys; checkProvision validates them.
type ProvisionKeys struct {
	Provision        []string `json:"provision,omitempty" doc:"Provisioning files run over SSH after the VM is up, in this order: .yaml/.yml with ansible-playbook, .pp with puppet apply; each relative to the spec file that names it. Only new and changed files run; what ran is recorded in the VM's description (see docs/provisioning.md)."`
	ForceConfigCheck *bool    `json:"forceConfigCheck,omitempty" doc:"Run every provisioning file at each apply, not only new and changed ones."`
	ProvisionTimeout *string  `json:"provisionTimeout,omitempty" doc:"How long provisioning waits for the VM's address, SSH and cloud-init together, as a Go duration (30s, 5m, 1h); default 10m. The files themselves run until they end."`
	SSHUser          *string  `json:"sshUser,omitempty" doc:"The SSH user provisioning connects as (then PROXMOX_SSH_USER, the connection's sshUser, root). Not written to PVE: set ciuser for cloud-init's user."`
	SSHPort          *int     `json:"sshPort,omitempty" doc:"The SSH port provisioning connects to (default 22). Not written to PVE."`
	SSHPrivateKey    *string  `json:"sshPrivateKey,omitempty" doc:"The SSH private key provisioning logs in with: a path (~/ allowed) or the PEM itself, best as ${VAR}; else the connection's sshPrivateKey, PROXMOX_SSH_PRIVATE_KEY, then ssh-agent. Never printed."`
	// ProvisionPaths are the files of Provision, resolved against the
	// spec file that names them (absolute): set by Load, not a spec key.
	ProvisionPaths []string `json:"provisionPaths,omitempty" internal:"true"`
}

// ProvisionKeyNames are the spec keys of ProvisionKeys.
var ProvisionKeyNames = []string{"provision", "forceConfigCheck", "provisionTimeout", "sshUser", "sshPort", "sshPrivateKey"}

// Provisioning returns the provisioning keys of r (nil when its kind has
// none).
func Provisioning(r *Resource) *ProvisionKeys {
	if p, ok := r.Keys.(interface{ provisionKeys() *ProvisionKeys }); ok {
		return p.provisionKeys()
	}
	return nil
}

func (p *ProvisionKeys) provisionKeys() *ProvisionKeys { return p }

// ConfigDriveKeys are a ConfigDriveISO's keys: the cloud-init seed (see
// pkg/cidata). Data fields are written into the image byte for byte.
type ConfigDriveKeys struct {
	// Format is nocloud (default) or configdrive2.
	Format        string `json:"format,omitempty" doc:"nocloud (default: volume label cidata) or configdrive2 (OpenStack config drive, label config-2)."`
	Hostname      string `json:"hostname,omitempty" doc:"The guest's hostname, written as local-hostname (NoCloud) or hostname (configdrive2)."`
	UserData      string `json:"userData,omitempty" doc:"The cloud-init user data, byte for byte (e.g. a #cloud-config document)."`
	NetworkConfig string `json:"networkConfig,omitempty" doc:"NoCloud network-config (cloud-init network config v1/v2); for configdrive2 an interfaces(5) text."`
	NetworkData   string `json:"networkData,omitempty" doc:"configdrive2 only: network_data.json, a JSON object."`
	VendorData    string `json:"vendorData,omitempty" doc:"Cloud-init vendor data."`
	// The …File keys give a data field as a file, relative to the spec
	// file that names it; Load reads it into the field.
	UserDataFile      string `json:"userDataFile,omitempty" doc:"userData read from this file, relative to the spec file."`
	NetworkConfigFile string `json:"networkConfigFile,omitempty" doc:"networkConfig read from this file, relative to the spec file."`
	NetworkDataFile   string `json:"networkDataFile,omitempty" doc:"networkData read from this file, relative to the spec file."`
	VendorDataFile    string `json:"vendorDataFile,omitempty" doc:"vendorData read from this file, relative to the spec file."`
}

// keysOr returns r's own keys when they are a *T, else a new zero T (a
// resource that sets none): the accessors below read keys through it
// without a nil check.
func keysOr[T any](r *Resource) *T {
	if k, ok := r.Keys.(*T); ok && k != nil {
		return k
	}
	return new(T)
}

// Guest returns r's guest keys (the zero value when it sets none).
func Guest(r *Resource) *GuestKeys {
	return keysOr[GuestKeys](r)
}

// TokenKeys are the pvectl keys of APIToken.
type TokenKeys struct {
	// SecretFile is where apply writes the secret PVE answers once, at
	// create (mode 0600; a missing directory is made 0700). Load makes it
	// absolute, relative to the directory of the file it is written in.
	SecretFile string `json:"secretFile,omitempty" doc:"Where the token's secret is written at create (mode 0600, in a 0700 directory made if missing), relative to the spec file; without it the secret is printed once at the end of apply. A missing file makes the next plan regenerate the secret."`
}

// Token returns r's API token keys (the zero value when it sets none).
func Token(r *Resource) *TokenKeys {
	return keysOr[TokenKeys](r)
}

// decodeKeys turns the validated own-key values of a resource into the
// kind's Keys struct; nil when the kind has none or none is set.
func decodeKeys(k *kindInfo, own map[string]any) (any, error) {
	if k.Keys == nil || len(own) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(own)
	if err != nil {
		return nil, err
	}
	return unmarshalKeys(k, b)
}

func unmarshalKeys(k *kindInfo, b []byte) (any, error) {
	v := reflect.New(reflect.TypeOf(k.Keys).Elem()).Interface()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return nil, fmt.Errorf("%s keys: %w", k.Name, err)
	}
	return v, nil
}

// OwnFields lists the own keys r sets, by name, as JSON values (strings,
// booleans, integers, lists): for showing them, not for deciding on them.
func (r *Resource) OwnFields() map[string]any {
	out := map[string]any{}
	if r.Keys == nil {
		return out
	}
	if fastOwnFields(r.Keys, out) {
		return out
	}
	return ownFieldsJSON(r.Keys)
}

// ownFieldsJSON is OwnFields through a JSON round trip: the reference
// that fastOwnFields follows, and what a Keys struct it cannot walk takes.
func ownFieldsJSON(keys any) map[string]any {
	out := map[string]any{}
	b, err := json.Marshal(keys)
	if err != nil {
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return out
	}
	for k, v := range m {
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil && !strings.ContainsAny(n.String(), ".eE") {
				v = int(i)
			} else if f, err := n.Float64(); err == nil {
				v = f
			}
		}
		out[k] = v
	}
	return out
}

// UnmarshalJSON reads a resource from a plan file, decoding Keys into its
// kind's struct.
func (r *Resource) UnmarshalJSON(b []byte) error {
	type plain Resource
	var aux struct {
		*plain
		Keys json.RawMessage `json:"own"`
	}
	aux.plain = (*plain)(r)
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	r.Keys = nil
	if len(aux.Keys) == 0 || string(aux.Keys) == "null" {
		return nil
	}
	k := kindOf(r.Kind)
	if k == nil || k.Keys == nil {
		return fmt.Errorf("%s: kind %q has no own keys", r.Address(), r.Kind)
	}
	keys, err := unmarshalKeys(k, aux.Keys)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Address(), err)
	}
	r.Keys = keys
	return nil
}

// NetworkApplyKeys are the pvectl keys of a node's network commit.
type NetworkApplyKeys struct {
	// RevertOnFailure: when the reload of the committed configuration
	// fails, put the node's interfaces back as the plan found them and
	// reload again.
	RevertOnFailure *bool `json:"revertOnFailure,omitempty" doc:"When the commit (ifreload) fails, put every interface back as the plan read it and reload again."`
}

// NetApply returns r's NetworkApply keys (the zero value when it sets none).
func NetApply(r *Resource) *NetworkApplyKeys {
	if k, ok := r.Keys.(*NetworkApplyKeys); ok && k != nil {
		return k
	}
	return &NetworkApplyKeys{}
}

// PoolKeys are a Pool's keys: its members beside the guests (a guest joins
// with its own `pool` key).
type PoolKeys struct {
	// Storages, when set, is the full set of storage members: a storage
	// not listed is taken out of the pool, [] empties it.
	Storages *[]string `json:"storages,omitempty" doc:"The storages that are members of the pool (PUT /pools storage=…), as a full set: a storage not listed is taken out, [] takes all out. Absent: storage membership is not managed. A guest joins a pool with its own pool key."`
}
