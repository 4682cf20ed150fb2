package planner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The needs the planner derives from a kind's declared calls are exactly
// what the simulator checks when apply makes them: a token holding only
// those privileges (each on its path alone, not propagated) plans the
// change, applies it and then plans clean; when any one of the change's
// needs is taken away between plan and apply, the simulator refuses a
// call (a 403, or a handler's refusal naming the privilege) and the
// change fails. A need another grant still answers (one privilege
// serving two needs) is not taken away alone.

// exactCase is one change of one kind: before is made by the admin
// first, then the plan to after (or its destroy) is applied by the token.
type exactCase struct {
	name, before, after string
	destroy             bool
	// setup, then then, are made by the admin before before.
	setup, then string
}

// planNeeds are the plan's change needs and the read needs of its
// resources (what apply's verification and the next plan read).
func planNeeds(t *testing.T, set *spec.Set, p *engine.Plan) (reads, changes []engine.PermNeed) {
	t.Helper()
	for _, r := range set.Resources {
		k, err := engine.KindOf(r.Kind)
		if err != nil {
			t.Fatal(err)
		}
		if needs, ok := engine.ReadNeeds(k, r); ok {
			reads = append(reads, vnetZoneNeeds(set, nil, r.Connection, needs)...)
		}
	}
	seen := map[string]bool{}
	for _, c := range p.Changes {
		for _, n := range c.Needs {
			if key := engine.NeedKey(n.Internal()); !seen[key] { // two changes may share one
				seen[key] = true
				changes = append(changes, n.Internal())
			}
		}
	}
	return reads, changes
}

// grantPrivs are the privileges each need is granted: all of them, or
// for any-of one that no all-of need asks for on the same path (so that
// taking one need away does not leave it granted by another).
func grantPrivs(needs []engine.PermNeed) [][]string {
	allOf := map[string]bool{}
	for _, n := range needs {
		if !n.AnyOf || len(n.Privs) == 1 {
			for _, p := range n.Privs {
				allOf[n.Path+" "+p] = true
			}
		}
	}
	out := make([][]string, len(needs))
	for i, n := range needs {
		out[i] = n.Privs
		if n.AnyOf {
			out[i] = n.Privs[:1]
			for _, p := range n.Privs {
				if !allOf[n.Path+" "+p] {
					out[i] = []string{p}
					break
				}
			}
		}
	}
	return out
}

// grantExactly gives user and its token each need's grantPrivs on the
// need's own path, without propagation, through one custom role each.
func grantExactly(t *testing.T, admin *simClients, user, token string, needs []engine.PermNeed) {
	t.Helper()
	ctx := context.Background()
	for i, privs := range grantPrivs(needs) {
		if needs[i].RootOnly {
			t.Fatalf("a root-only need cannot be granted: %s", needs[i].Why)
		}
		role := fmt.Sprintf("exact%d", i)
		if err := admin.cl.Do(ctx, http.MethodPost, "/access/roles", url.Values{"roleid": {role}, "privs": {strings.Join(privs, ",")}}, nil); err != nil {
			t.Fatal(err)
		}
		if err := admin.cl.Do(ctx, http.MethodPut, "/access/acl", url.Values{"path": {needs[i].Path}, "roles": {role},
			"users": {user}, "tokens": {token}, "propagate": {"0"}}, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// impliedWithout reports whether the other grants still hold need drop
// of needs (one privilege answering two needs): taking it away then
// changes nothing to check.
func impliedWithout(needs []engine.PermNeed, drop int) bool {
	perms := pve.Permissions{}
	for i, privs := range grantPrivs(needs) {
		if i == drop {
			continue
		}
		if perms[needs[i].Path] == nil {
			perms[needs[i].Path] = map[string]bool{}
		}
		for _, p := range privs {
			perms[needs[i].Path][p] = false
		}
	}
	return (&engine.LiveConn{Perms: perms}).Held(needs[drop])
}

// runExact plans tc as a token holding exactly the derived needs (the
// admin plans first to learn them), takes the change need drop away
// again (-1: none), and applies; it returns the apply's failures.
func runExact(t *testing.T, tc exactCase, drop int) (reads, changes []engine.PermNeed, failed error) {
	t.Helper()
	admin := newSim(t)
	for _, doc := range []string{tc.setup, tc.then} {
		if doc != "" {
			applyPlan(t, admin, planFor(t, admin, loadSpec(t, doc), engine.Options{}))
		}
	}
	if tc.before != "" {
		applyPlan(t, admin, planFor(t, admin, loadSpec(t, tc.before), engine.Options{}))
	}
	set := loadSpec(t, tc.after)
	reads, changes = planNeeds(t, set, planFor(t, admin, set, engine.Options{Destroy: tc.destroy}))
	tok, id := asToken(t, admin, "exact@pve", "apply")
	grantExactly(t, admin, "exact@pve", id, append(append([]engine.PermNeed{}, reads...), changes...))
	p := planFor(t, tok, set, engine.Options{Destroy: tc.destroy})
	if !p.HasChanges() {
		t.Fatalf("%s: the token's plan changes nothing", tc.name)
	}
	if drop >= 0 {
		n := changes[drop]
		if err := admin.cl.Do(context.Background(), http.MethodPut, "/access/acl", url.Values{"path": {n.Path},
			"roles": {fmt.Sprintf("exact%d", len(reads)+drop)}, "users": {"exact@pve"}, "tokens": {id}, "delete": {"1"}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	res, err := engine.Apply(context.Background(), tok, p, engine.ApplyOptions{Hooks: &recHooks{}})
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	if res != nil {
		for a, e := range res.Failed {
			errs = append(errs, fmt.Errorf("%s: %w", a, e))
		}
	}
	if drop < 0 && len(errs) == 0 && !tc.destroy {
		if after := planFor(t, tok, set, engine.Options{}); after.HasChanges() {
			errs = append(errs, fmt.Errorf("the token's plan after apply: %s", summary(after)))
		}
	}
	return reads, changes, errors.Join(errs...)
}

// crud is name's create, update and delete of doc (the update replaces
// old by new), each after what base sets up.
func crud(name string, base exactCase, doc, old, new string) []exactCase {
	c, u, d := base, base, base
	c.name, c.after = name+" create", doc
	u.name, u.before, u.after = name+" update", doc, strings.Replace(doc, old, new, 1)
	d.name, d.before, d.after, d.destroy = name+" delete", doc, doc, true
	return []exactCase{c, u, d}
}

// checkExact runs the cases of each group in turn.
func checkExact(t *testing.T, groups ...[]exactCase) {
	var cases []exactCase
	for _, g := range groups {
		cases = append(cases, g...)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reads, changes, err := runExact(t, tc, -1)
			if err != nil {
				t.Fatalf("with exactly the derived needs %v: %v", changes, err)
			}
			for i, n := range changes {
				if impliedWithout(append(append([]engine.PermNeed{}, reads...), changes...), len(reads)+i) {
					continue
				}
				if _, _, err := runExact(t, tc, i); !refusedFor(err, n) {
					t.Errorf("without %s on %s (%s): got %v, want PVE's refusal", engine.PrivList(n), n.Path, n.Why, err)
				}
			}
		})
	}
}

// refusedFor reports whether err is PVE refusing a call for the lack of
// n: a 403, or a handler's refusal naming the privilege (update_acl's
// "requires 'Permissions.Modify' or superset of privileges").
func refusedFor(err error, n engine.PermNeed) bool {
	if err == nil {
		return false
	}
	if strings.Contains(err.Error(), "403") {
		return true
	}
	for _, p := range n.Privs {
		if strings.Contains(err.Error(), "requires '"+p+"'") {
			return true
		}
	}
	return false
}

// exactVM is the VM the exact-needs cases of HA, firewalls and the like
// are about.
const exactVM = "kind: QemuVM\nname: app\nspec:\n  vmid: 100\n  memory: 512\n"

// TestSimDerivedNeedsExactClusterKinds covers the cluster-wide and node
// kinds whose calls are declared.
func TestSimDerivedNeedsExactClusterKinds(t *testing.T) {
	nfs := "kind: Storage\nname: nfs-images\nspec:\n  type: nfs\n  server: 127.0.0.9\n  export: /srv/images\n  content: iso\n"
	group := "kind: SecurityGroup\nname: web\nspec:\n  comment: web\n  rules:\n    - {type: in, action: ACCEPT, macro: HTTPS}\n"
	pool := "kind: Pool\nname: team\nspec:\n  comment: the team\n"
	checkExact(t,
		crud("Pool", exactCase{}, pool, "the team", "renamed"),
		[]exactCase{
			{name: "ClusterOptions update", after: "kind: ClusterOptions\nname: cluster\nspec:\n  keyboard: de\n"},
			{name: "NodeDns update", after: "kind: NodeDns\nname: pve\nspec:\n  search: example.org\n"},
		},
		crud("Storage", exactCase{}, nfs, "iso", "iso,images"),
		crud("SecurityGroup", exactCase{}, group, "HTTPS", "SSH"),
	)
}

// TestSimDerivedNeedsExactNodeKinds covers interfaces with their commit
// and the files a storage keeps.
func TestSimDerivedNeedsExactNodeKinds(t *testing.T) {
	bridge := "kind: LinuxBridge\nname: vmbr7\nspec:\n  comments: lab\n---\nkind: NetworkApply\nname: pve\n"
	img := "kind: DownloadedImage\nname: img\nspec:\n  node: pve\n  storage: local\n  content: iso\n  filename: amb.iso\n  url: https://127.0.0.1/amb.iso\n"
	drive := "kind: ConfigDriveISO\nname: seed-amb\nspec:\n  storage: local\n  hostname: amb\n"
	checkExact(t,
		crud("LinuxBridge", exactCase{}, bridge, "lab", "lab 2"),
		[]exactCase{
			{name: "DownloadedImage create", after: img},
			{name: "DownloadedImage delete", before: img, after: img, destroy: true},
		},
		crud("ConfigDriveISO", exactCase{}, drive, "amb\n", "amb2\n"),
	)
}

// TestSimDerivedNeedsExactConfigKinds covers the kinds of section configs
// (user.cfg, jobs.cfg, ha, status.cfg).
func TestSimDerivedNeedsExactConfigKinds(t *testing.T) {
	group := "kind: Group\nname: ops\nspec:\n  comment: operators\n"
	role := "kind: Role\nname: Operator\nspec:\n  privs: [VM.Audit, VM.Console]\n"
	metric := "kind: MetricServer\nname: graph\nspec:\n  type: graphite\n  server: 127.0.0.7\n  port: 2003\n"
	ha := "kind: HAResource\nname: app\nspec:\n  guest: 100\n  state: stopped\n  comment: app\n"
	backup := "kind: BackupJob\nname: nightly\nspec:\n  schedule: \"21:00\"\n  all: true\n  storage: local\n"
	// No storage writes to local (VZDump.pm get_storage_param); fleecing
	// images want space on their storage.
	weekly := "kind: BackupJob\nname: weekly\nspec:\n  schedule: sun 03:00\n  all: true\n  fleecing: enabled=1,storage=local-lvm\n"
	checkExact(t,
		crud("Group", exactCase{}, group, "operators", "ops"),
		crud("Role", exactCase{}, role, "VM.Console", "VM.PowerMgmt"),
		crud("MetricServer", exactCase{}, metric, "2003", "2004"),
		[]exactCase{
			{name: "HAResource create", before: exactVM, after: ha},
			{name: "HAResource update", setup: exactVM, before: ha, after: strings.Replace(ha, "comment: app", "comment: app 2", 1)},
			{name: "HAResource delete", setup: exactVM, before: ha, after: ha, destroy: true},
		},
		crud("BackupJob", exactCase{}, backup, "21:00", "22:00"),
		crud("BackupJob", exactCase{}, weekly, "sun 03:00", "sat 03:00"),
		[]exactCase{
			{name: "BackupJob update deleting its storage", before: backup, after: strings.Replace(backup, "storage: local", "storage: null", 1)},
		},
	)
}

// TestSimDerivedNeedsExactAccessKinds covers users, tokens and grants.
func TestSimDerivedNeedsExactAccessKinds(t *testing.T) {
	user := "kind: User\nname: ci@pve\nspec:\n  comment: CI\n"
	token := "kind: APIToken\nname: deploy\nspec:\n  userid: ci@pve\n  comment: deploys\n"
	grant := "kind: ACL\nname: lab\nspec:\n  path: /pool/lab\n  users: ci@pve\n  roles: PVEAuditor\n"
	lab := user + "---\nkind: Pool\nname: lab\n"
	checkExact(t,
		crud("User", exactCase{}, user, "CI", "CI 2"),
		crud("APIToken", exactCase{setup: user}, token, "deploys", "deploys 2"),
		[]exactCase{
			{name: "ACL create", setup: lab, after: grant},
			{name: "ACL delete", setup: lab, before: grant, after: grant, destroy: true},
		},
	)
}

// TestSimDerivedNeedsExactFirewall covers a firewall of each scope.
func TestSimDerivedNeedsExactFirewall(t *testing.T) {
	node := "kind: Firewall\nname: host\nspec:\n  scope: node/pve\n  options:\n    log_level_in: info\n  rules:\n    - {type: in, action: ACCEPT, proto: tcp, dport: 22}\n"
	guest := exactVM + "---\nkind: Firewall\nname: app\nspec:\n  scope: QemuVM/app\n  rules:\n    - {type: in, action: ACCEPT, macro: HTTPS}\n"
	checkExact(t, []exactCase{
		{name: "Firewall node create", after: node},
		{name: "Firewall node update", before: node, after: strings.Replace(node, "22", "2222", 1)},
		{name: "Firewall guest create", before: exactVM, after: guest},
		{name: "Firewall guest update", before: guest, after: strings.Replace(guest, "HTTPS", "SSH", 1)},
	})
}

// TestSimDerivedNeedsExactVnetFirewall: a vnet's firewall needs its
// privilege on the vnet in its zone (Vnet.pm), found from the specs'
// SdnVnet, not on /sdn/zones as a whole.
func TestSimDerivedNeedsExactVnetFirewall(t *testing.T) {
	sdn := "kind: SdnZone\nname: lan\nspec: {type: vlan, bridge: vmbr0}\n---\nkind: SdnVnet\nname: web\nspec: {zone: lan, tag: 10}\n---\nkind: SdnApply\nname: sdn\n"
	fw := "kind: Firewall\nname: web\nspec:\n  scope: SdnVnet/web\n  options: {enable: 1}\n  rules:\n    - {type: forward, action: ACCEPT, proto: tcp, dport: 443}\n"
	vnetDoc := "kind: SdnVnet\nname: web\nspec: {zone: lan, tag: 10}\nmanaged: false\n---\n"
	checkExact(t, []exactCase{
		{name: "Firewall vnet create", setup: sdn, after: vnetDoc + fw},
		{name: "Firewall vnet update", setup: sdn, before: vnetDoc + fw, after: vnetDoc + strings.Replace(fw, "443", "8443", 1)},
	})
}

// TestSimDerivedNeedsExactGuests covers a VM and a container: created
// with disks, a NIC and started; changed; grown; stopped; deleted.
func TestSimDerivedNeedsExactGuests(t *testing.T) {
	vm := "kind: QemuVM\nname: app\nspec:\n  vmid: 100\n  memory: 512\n  scsi0: local-lvm:4\n  net0: virtio,bridge=vmbr0\n  running: true\n"
	ct := "kind: LxcContainer\nname: cache\nspec:\n  vmid: 200\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n  memory: 256\n  rootfs: local-lvm:2\n"
	checkExact(t,
		[]exactCase{
			{name: "QemuVM create", after: vm},
			{name: "QemuVM update", before: vm, after: strings.Replace(vm, "memory: 512", "memory: 1024", 1)},
			{name: "QemuVM grow", before: vm, after: strings.Replace(vm, "local-lvm:4", "local-lvm:8", 1)},
			{name: "QemuVM stop", before: vm, after: strings.Replace(vm, "running: true", "running: false", 1)},
			{name: "QemuVM delete", before: vm, after: vm, destroy: true},
		},
		crud("LxcContainer", exactCase{}, ct, "memory: 256", "memory: 512"),
	)
}

// TestSimDerivedNeedsExactTemplates covers a bake (clone, start, shut
// down, convert) and a VM cloned from a template. Their vmids are pinned:
// a guest found by name needs VM.Audit on every guest (/vms propagated),
// which no grant on one path gives.
func TestSimDerivedNeedsExactTemplates(t *testing.T) {
	checkExact(t, []exactCase{
		{name: "Template create", after: "kind: Template\nname: golden\nspec:\n  baseImage: \"9000\"\n  vmid: 150\n  cores: 2\n"},
		{name: "QemuVM clone", after: "kind: QemuVM\nname: c1\nspec:\n  image: \"9000\"\n  vmid: 151\n  memory: 1024\n"},
	})
}

// TestSimDerivedNeedsExactRealmsAndRules covers realms, their sync jobs
// and HA rules.
func TestSimDerivedNeedsExactRealmsAndRules(t *testing.T) {
	realm := "kind: Realm\nname: corp\nspec:\n  type: ldap\n  server1: 127.0.0.5\n  base_dn: dc=corp\n  user_attr: uid\n  comment: corp\n"
	sync := "kind: RealmSyncJob\nname: nightly\nspec:\n  realm: corp\n  schedule: \"02:30\"\n  scope: users\n"
	ha := "kind: HAResource\nname: app\nspec:\n  guest: 100\n  state: stopped\n"
	rule := "kind: HARule\nname: keep\nspec:\n  type: node-affinity\n  resources: vm:100\n  nodes: pve\n  comment: keep\n"
	checkExact(t,
		crud("Realm", exactCase{}, realm, "comment: corp", "comment: corp 2"),
		crud("RealmSyncJob", exactCase{setup: realm}, sync, "02:30", "03:30"),
		crud("HARule", exactCase{setup: exactVM, then: ha}, rule, "comment: keep", "comment: kept"),
	)
}

// TestSimDerivedNeedsExactSdn covers SDN entries with their commit.
func TestSimDerivedNeedsExactSdn(t *testing.T) {
	zone := "kind: SdnZone\nname: lan\nspec: {type: vlan, bridge: vmbr0}\n"
	vnet := "kind: SdnVnet\nname: web\nspec: {zone: lan, tag: 10}\n"
	apply := "---\nkind: SdnApply\nname: sdn\n"
	checkExact(t, []exactCase{
		{name: "SdnZone create", after: zone + apply},
		{name: "SdnVnet create", setup: zone + apply, after: vnet + apply},
		{name: "SdnVnet update", setup: zone + apply, before: vnet + apply, after: strings.Replace(vnet, "tag: 10", "tag: 20", 1) + apply},
		{name: "SdnVnet delete", setup: zone + apply, before: vnet + apply, after: vnet, destroy: true},
	})
}

// TestSimDerivedNeedsExactHardwareMapping covers a USB mapping.
func TestSimDerivedNeedsExactHardwareMapping(t *testing.T) {
	usb := "kind: HardwareMapping\nname: stick\nspec:\n  type: usb\n  description: a stick\n  map: [\"node=pve,id=0781:5583,path=1-2\"]\n"
	checkExact(t,
		crud("HardwareMapping", exactCase{}, usb, "a stick", "the stick"),
	)
}
