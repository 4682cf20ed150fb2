package pvesim_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// as calls with another token's header.
func (e *env) as(auth, method, path string, kv ...string) envelope {
	e.t.Helper()
	params := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		params.Add(kv[i], kv[i+1])
	}
	return e.raw(method, path, params, "PVEAPIToken="+auth)
}

// newToken creates user (if new) and a token for it through the API and
// returns "id=secret" for its header.
func (e *env) newToken(user, name string, privsep bool) string {
	e.t.Helper()
	users := e.rows("/access/users")
	if !slices.ContainsFunc(users, func(u map[string]any) bool { return u["userid"] == user }) {
		e.ok(nil, "POST", "/access/users", "userid", user)
	}
	var created struct {
		Full  string `json:"full-tokenid"`
		Value string `json:"value"`
	}
	e.ok(&created, "POST", "/access/users/"+user+"/token/"+name, "privsep", map[bool]string{true: "1", false: "0"}[privsep])
	return created.Full + "=" + created.Value
}

func (e *env) grant(path, role, kind, who string, kv ...string) {
	e.t.Helper()
	e.ok(nil, "PUT", "/access/acl", append([]string{"path", path, "roles", role, kind, who}, kv...)...)
}

func dataList(t *testing.T, r envelope) []map[string]any {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("got %d %q, want 200", r.Status, r.Message)
	}
	var out []map[string]any
	if err := json.Unmarshal(r.Data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func wantDenied(t *testing.T, r envelope, what string) {
	t.Helper()
	want := "Permission check failed"
	if what != "" {
		want += " (" + what + ")"
	}
	if r.Status != 403 || r.Message != want {
		t.Errorf("got %d %q, want 403 %q", r.Status, r.Message, want)
	}
}

// TestTokensAuthenticate: a token created through the API works with the
// secret it was answered with, and stops working as PVE's verify_token
// says (wrong secret, deleted, expired, user disabled or gone).
func TestTokensAuthenticate(t *testing.T) {
	e := checkedEnv(t, pvesim.Options{})
	auth := e.newToken("ci@pve", "plan", true)
	id, secret, _ := strings.Cut(auth, "=")
	if r := e.as(auth, "GET", "/version"); r.Status != 200 {
		t.Fatalf("got %d %q with the created token, want 200", r.Status, r.Message)
	}
	if r := e.as(id+"=x"+secret, "GET", "/version"); r.Status != 401 || !r.Empty {
		t.Errorf("got %d for a wrong secret, want an empty 401", r.Status)
	}
	var regen map[string]any
	e.ok(&regen, "PUT", "/access/users/ci@pve/token/plan", "regenerate", "1")
	if r := e.as(auth, "GET", "/version"); r.Status != 401 {
		t.Errorf("got %d with the secret a regenerate replaced, want 401", r.Status)
	}
	auth = id + "=" + regen["value"].(string)
	if r := e.as(auth, "GET", "/version"); r.Status != 200 {
		t.Errorf("got %d with the regenerated secret, want 200", r.Status)
	}
	e.ok(nil, "PUT", "/access/users/ci@pve", "enable", "0")
	if r := e.as(auth, "GET", "/version"); r.Status != 401 {
		t.Errorf("got %d for a disabled user, want 401", r.Status)
	}
	e.ok(nil, "PUT", "/access/users/ci@pve", "enable", "1")
	e.ok(nil, "PUT", "/access/users/ci@pve/token/plan", "expire", "1000")
	if r := e.as(auth, "GET", "/version"); r.Status != 401 {
		t.Errorf("got %d for an expired token, want 401", r.Status)
	}
	e.ok(nil, "DELETE", "/access/users/ci@pve/token/plan")
	if r := e.as(auth, "GET", "/version"); r.Status != 401 {
		t.Errorf("got %d for a deleted token, want 401", r.Status)
	}
}

// TestPrivilegeSeparatedTokenWithoutACLs: PVE refuses direct reads with a
// 403 naming path and privilege, and lists silently leave out what the
// token may not see (pve-manager API2/Cluster.pm, Pool.pm, Network.pm,
// Tasks.pm, Nodes.pm; qemu-server vmlist; pve-storage indexes).
func TestPrivilegeSeparatedTokenWithoutACLs(t *testing.T) {
	e := checkedEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/pools", "poolid", "dev")
	upid := e.task("POST", "/nodes/pve/qemu/9000/clone", "newid", "101", "pool", "dev")
	e.wait(upid)
	auth := e.newToken("ci@pve", "plan", true)

	wantDenied(t, e.as(auth, "GET", "/nodes/pve/qemu/9000/config"), "/vms/9000, VM.Audit")
	wantDenied(t, e.as(auth, "GET", "/nodes/pve/qemu/101/status/current"), "/vms/101, VM.Audit")
	wantDenied(t, e.as(auth, "GET", "/pools/dev"), "/pool/dev, Pool.Audit")
	wantDenied(t, e.as(auth, "GET", "/nodes/pve/network/vmbr0"), "/nodes/pve, Sys.Audit")
	wantDenied(t, e.as(auth, "GET", "/nodes/pve/tasks/"+url.PathEscape(upid)+"/status"), "/nodes/pve, Sys.Audit")

	for _, row := range dataList(t, e.as(auth, "GET", "/cluster/resources")) {
		switch row["type"] {
		case "node":
			if _, shown := row["maxmem"]; shown || row["status"] != "online" {
				t.Errorf("got node row %v, want it without figures", row)
			}
		default:
			t.Errorf("got %v in /cluster/resources, want it filtered", row)
		}
	}
	for _, path := range []string{"/pools", "/nodes/pve/qemu", "/storage", "/nodes/pve/storage", "/nodes/pve/tasks",
		"/access/users", "/access/groups", "/access/acl"} {
		if rows := dataList(t, e.as(auth, "GET", path)); len(rows) != 0 {
			t.Errorf("GET %s: got %v, want nothing listed", path, rows)
		}
	}
	for _, row := range dataList(t, e.as(auth, "GET", "/nodes/pve/network")) {
		if row["type"] == "bridge" {
			t.Errorf("got bridge %v, want bridges filtered", row["iface"])
		}
	}
	nodes := e.rows("/nodes")
	if _, ok := nodes[0]["maxmem"]; !ok {
		t.Errorf("got node %v for the admin token, want its figures", nodes[0])
	}
}

// TestPermissionBeforeParameters: the method's check comes before its
// parameters are verified (pve-manager PVE/HTTPServer.pm rest_handler).
func TestPermissionBeforeParameters(t *testing.T) {
	e := newEnv(t, pvesim.Options{}) // the request breaks the schema on purpose
	auth := e.newToken("ci@pve", "plan", true)
	wantDenied(t, e.as(auth, "POST", "/nodes/pve/qemu/100/config", "cores", "many"),
		"/vms/100, VM.Config.Disk|VM.Config.CDROM|VM.Config.CPU|VM.Config.Memory|VM.Config.Network|VM.Config.HWType|VM.Config.Options|VM.Config.Cloudinit")
	if r := e.call("POST", "/nodes/pve/qemu/100/config", "cores", "many"); r.Status != 400 {
		t.Errorf("got %d for the admin token, want the 400 of the parameter check", r.Status)
	}
}

// TestACLsGrantAsPVE: privilege separation intersects the token's ACLs
// with its user's; propagation, groups, pools and NoAccess work as in
// AccessControl.pm roles() and RPCEnvironment.pm permissions().
func TestACLsGrantAsPVE(t *testing.T) {
	e := checkedEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/pools", "poolid", "dev")
	e.wait(e.task("POST", "/nodes/pve/qemu/9000/clone", "newid", "101", "pool", "dev"))
	sep := e.newToken("ci@pve", "sep", true)
	full := e.newToken("ci@pve", "full", false)
	sepID, _, _ := strings.Cut(sep, "=")
	read := func(auth, vmid string) int { return e.as(auth, "GET", "/nodes/pve/qemu/"+vmid+"/config").Status }

	e.grant("/vms", "PVEAuditor", "tokens", sepID)
	if got := read(sep, "9000"); got != 403 {
		t.Errorf("token ACL alone: got %d, want 403 (its user has nothing)", got)
	}
	e.grant("/vms", "PVEAuditor", "users", "ci@pve")
	if got, got2 := read(sep, "9000"), read(full, "9000"); got != 200 || got2 != 200 {
		t.Errorf("token and user ACLs: got %d (privsep) %d (no privsep), want 200", got, got2)
	}
	e.ok(nil, "PUT", "/access/acl", "path", "/vms", "roles", "PVEAuditor", "tokens", sepID, "delete", "1")
	if got, got2 := read(sep, "9000"), read(full, "9000"); got != 403 || got2 != 200 {
		t.Errorf("user ACL alone: got %d (privsep) %d (no privsep), want 403 and 200", got, got2)
	}

	// propagate=0 covers the path itself only.
	e.grant("/vms", "PVEAuditor", "tokens", sepID, "propagate", "0")
	if got := read(sep, "9000"); got != 403 {
		t.Errorf("unpropagated ACL on /vms: got %d for /vms/9000, want 403", got)
	}
	// A pool's ACL reaches its members; NoAccess deeper wins.
	e.grant("/pool/dev", "PVEVMAdmin", "tokens", sepID)
	e.grant("/pool/dev", "PVEVMAdmin", "users", "ci@pve")
	if got, got2 := read(sep, "101"), read(sep, "9000"); got != 200 || got2 != 403 {
		t.Errorf("pool ACL: got %d for its member, %d for another VM, want 200 and 403", got, got2)
	}
	e.grant("/vms/101", "NoAccess", "users", "ci@pve")
	if got := read(full, "101"); got != 403 {
		t.Errorf("NoAccess on /vms/101: got %d, want 403", got)
	}
	// A group's ACL counts for its members.
	e.ok(nil, "POST", "/access/groups", "groupid", "ops")
	e.ok(nil, "POST", "/access/users", "userid", "op@pve", "groups", "ops")
	op := e.newToken("op@pve", "tk", false)
	e.grant("/", "PVEAuditor", "groups", "ops")
	if got := read(op, "9000"); got != 200 {
		t.Errorf("group ACL: got %d, want 200", got)
	}

	var perms map[string]map[string]int
	r := e.as(sep, "GET", "/access/permissions")
	if err := json.Unmarshal(r.Data, &perms); err != nil || r.Status != 200 {
		t.Fatalf("permissions: %d %v", r.Status, err)
	}
	if perms["/pool/dev"]["VM.Allocate"] != 1 || perms["/vms/101"]["VM.Allocate"] != 0 || perms["/vms"]["VM.Audit"] != 0 {
		t.Errorf("got permissions %v, want VM.Allocate on /pool/dev (propagated) and /vms/101 (from the pool), VM.Audit on /vms unpropagated", perms)
	}
	if _, ok := perms["/vms/9000"]; ok {
		t.Errorf("got %v for /vms/9000, want no entry (no ACL names it)", perms["/vms/9000"])
	}
	r = e.as(sep, "GET", "/access/permissions", "path", "/vms/9000")
	if r.Status != 200 || string(r.Data) != `{"/vms/9000":{}}` {
		t.Errorf("permissions of /vms/9000: got %d %s, want an empty set", r.Status, r.Data)
	}
	wantDenied(t, e.as(sep, "GET", "/access/permissions", "userid", "root@pam"), "/access, Sys.Audit")
	if r := e.as(full, "GET", "/access/permissions", "userid", "root@pam", "path", "/"); r.Status != 403 {
		t.Errorf("another user's permissions without Sys.Audit: got %d, want 403", r.Status)
	}
	r = e.call("GET", "/access/permissions", "path", "/vms/100")
	if err := json.Unmarshal(r.Data, &perms); err != nil || perms["/vms/100"]["Permissions.Modify"] != 1 || perms["/vms/100"]["Sys.Modify"] != 1 {
		t.Errorf("admin token (root@pam, no privilege separation): got %s, want every privilege", r.Data)
	}
}

// TestGuestWritesCheckEachSetting: create, config and clone check what
// each setting needs (qemu-server API2/Qemu.pm); a missing pool is a 403.
func TestGuestWritesCheckEachSetting(t *testing.T) {
	e := checkedEnv(t, pvesim.Options{})
	auth := e.newToken("ci@pve", "tk", false)
	create := func(kv ...string) envelope {
		return e.as(auth, "POST", "/nodes/pve/qemu", append([]string{"vmid", "150"}, kv...)...)
	}
	wantDenied(t, create("pool", "nope"), "pool 'nope' does not exist")
	wantDenied(t, create("name", "x"), "")
	e.grant("/vms", "PVEVMAdmin", "users", "ci@pve")
	wantDenied(t, create("scsi0", "local-lvm:4"), "/storage/local-lvm, Datastore.AllocateSpace")
	wantDenied(t, create("net0", "virtio,bridge=vmbr0"), "/sdn/zones/localnetwork/vmbr0, SDN.Use")
	wantDenied(t, create("net0", "virtio,bridge=vmbr0,tag=20"), "/sdn/zones/localnetwork/vmbr0/20, SDN.Use")
	wantDenied(t, create("startup", "order=1"), "/, Sys.Modify")
	if r := create("args", "-no-reboot"); r.Status != 500 || r.Message != "only root can set 'args' config" {
		t.Errorf("args: got %d %q, want 500 only root", r.Status, r.Message)
	}
	if r := create("hostpci0", "0000:01:00.0"); r.Status != 500 || !strings.Contains(r.Message, "non-mapped devices") {
		t.Errorf("hostpci: got %d %q, want 500 only root", r.Status, r.Message)
	}
	e.grant("/storage", "PVEDatastoreUser", "users", "ci@pve")
	e.grant("/sdn/zones/localnetwork", "PVESDNUser", "users", "ci@pve")
	r := create("name", "web", "scsi0", "local-lvm:4", "net0", "virtio,bridge=vmbr0,tag=20", "ide2", "none,media=cdrom")
	if r.Status != 200 {
		t.Fatalf("create with the rights: got %d %q", r.Status, r.Message)
	}
	var upid string
	json.Unmarshal(r.Data, &upid)
	if st := e.wait(upid); st.User != "ci@pve" && !strings.HasPrefix(st.User, "ci@pve") {
		t.Errorf("got task user %q, want the token's", st.User)
	}

	// A PVEVMUser may change the CD-ROM and power the VM, not its memory.
	user := e.newToken("vmuser@pve", "tk", false)
	e.grant("/vms/150", "PVEVMUser", "users", "vmuser@pve")
	wantDenied(t, e.as(user, "PUT", "/nodes/pve/qemu/150/config", "memory", "4096"), "/vms/150, VM.Config.Memory")
	wantDenied(t, e.as(user, "PUT", "/nodes/pve/qemu/150/config", "delete", "scsi0"), "/vms/150, VM.Config.Disk")
	if r := e.as(user, "PUT", "/nodes/pve/qemu/150/config", "ide2", "none,media=cdrom"); r.Status != 200 {
		t.Errorf("CD-ROM change by a PVEVMUser: got %d %q, want 200", r.Status, r.Message)
	}
	if r := e.as(user, "POST", "/nodes/pve/qemu/150/status/start", "skiplock", "1"); r.Status != 400 || r.Errors["skiplock"] != "Only root may use this option." {
		t.Errorf("skiplock by a token: got %d %v, want 400", r.Status, r.Errors)
	}
	wantDenied(t, e.as(user, "DELETE", "/nodes/pve/qemu/150"), "/vms/150, VM.Allocate")
	wantDenied(t, e.as(user, "POST", "/nodes/pve/qemu/150/clone", "newid", "151"), "/vms/150, VM.Clone")
	wantDenied(t, e.as(auth, "POST", "/nodes/pve/qemu/150/clone", "newid", "151", "pool", "nope"), "pool 'nope' does not exist")
}

// TestRolesAndACLChanges: custom roles as API2/Role.pm; a caller without
// Permissions.Modify hands out only what it holds (API2/ACL.pm).
func TestRolesAndACLChanges(t *testing.T) {
	e := checkedEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/access/roles", "roleid", "Auditors", "privs", "VM.Audit,Sys.Audit")
	var role map[string]int
	e.ok(&role, "GET", "/access/roles/Auditors")
	if len(role) != 2 || role["VM.Audit"] != 1 {
		t.Errorf("got role %v", role)
	}
	if r := e.call("POST", "/access/roles", "roleid", "PVEMine"); r.Status != 400 {
		t.Errorf("a PVE* role id: got %d, want 400", r.Status)
	}
	if r := e.call("PUT", "/access/roles/PVEAuditor", "privs", "VM.Audit"); r.Status != 500 {
		t.Errorf("changing a built-in role: got %d, want 500", r.Status)
	}
	e.ok(nil, "PUT", "/access/roles/Auditors", "privs", "Pool.Audit", "append", "1")
	roles := e.rows("/access/roles")
	for _, r := range roles {
		if r["roleid"] == "Auditors" && r["privs"] != "Pool.Audit,Sys.Audit,VM.Audit" {
			t.Errorf("got %v, want the appended privileges", r)
		}
		if r["roleid"] == "PVEVMUser" && r["special"] != float64(1) {
			t.Errorf("got %v, want special", r)
		}
	}
	auth := e.newToken("ci@pve", "tk", false)
	e.grant("/vms/100", "PVEVMAdmin", "users", "ci@pve")
	if r := e.as(auth, "PUT", "/access/acl", "path", "/vms/100", "roles", "PVEVMUser", "users", "ci@pve"); r.Status != 200 {
		t.Errorf("granting a subset with VM.Allocate: got %d %q, want 200", r.Status, r.Message)
	}
	if r := e.as(auth, "PUT", "/access/acl", "path", "/vms/100", "roles", "Administrator", "users", "ci@pve"); r.Status != 500 ||
		!strings.Contains(r.Message, "Cannot add role 'Administrator' - requires 'Permissions.Modify' or superset of privileges.") {
		t.Errorf("granting more than held: got %d %q, want 500", r.Status, r.Message)
	}
	wantDenied(t, e.as(auth, "PUT", "/access/acl", "path", "/vms/101", "roles", "PVEVMUser", "users", "ci@pve"),
		"/vms/101, Permissions.Modify|VM.Allocate")
	if r := e.call("PUT", "/access/acl", "path", "/nodes/pve/qemu", "roles", "PVEAuditor", "users", "ci@pve"); r.Status != 400 {
		t.Errorf("an invalid ACL path: got %d, want 400", r.Status)
	}
	e.ok(nil, "DELETE", "/access/roles/Auditors")
}

// TestExtraTokens: Options.Tokens start privilege-separated and without
// ACLs; a token without Sys.Audit on the node sees its own tasks only.
func TestExtraTokens(t *testing.T) {
	const try = "ci@pve!try=s3cret"
	e := startEnv(t, simtest.Options{Conformance: true, Sim: pvesim.Options{Tokens: []pvesim.Token{{ID: "ci@pve!try", Secret: "s3cret"}}}})
	wantDenied(t, e.as(try, "GET", "/nodes/pve/qemu/9000/config"), "/vms/9000, VM.Audit")
	e.grant("/", "Administrator", "users", "ci@pve")
	e.grant("/vms", "PVEVMAdmin", "tokens", "ci@pve!try")
	admin := e.task("POST", "/nodes/pve/qemu/9000/clone", "newid", "101")
	e.wait(admin)
	r := e.as(try, "POST", "/nodes/pve/qemu/101/status/start")
	var mine string
	if err := json.Unmarshal(r.Data, &mine); r.Status != 200 || err != nil {
		t.Fatalf("start as the extra token: got %d %q", r.Status, r.Message)
	}
	e.wait(mine)
	var seen []string
	for _, row := range dataList(t, e.as(try, "GET", "/nodes/pve/tasks", "source", "all")) {
		seen = append(seen, row["upid"].(string))
	}
	if !slices.Equal(seen, []string{mine}) {
		t.Errorf("got tasks %v, want only the token's own %s", seen, mine)
	}
	if rows := dataList(t, e.call("GET", "/nodes/pve/tasks", "source", "all")); len(rows) != 2 {
		t.Errorf("got %d tasks for the admin token, want both", len(rows))
	}
}

// TestStorageAndPoolMembersChecks: content lists and deletes check volume
// access (pve-storage Storage.pm check_volume_access, Content.pm); adding a
// VM to a pool needs the right to change its permissions (Pool.pm).
func TestStorageAndPoolMembersChecks(t *testing.T) {
	e := checkedEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/pools", "poolid", "dev")
	auth := e.newToken("ci@pve", "tk", false)
	e.grant("/storage", "PVEAuditor", "users", "ci@pve")
	var vols []string
	for _, row := range dataList(t, e.as(auth, "GET", "/nodes/pve/storage/local-lvm/content")) {
		vols = append(vols, row["volid"].(string))
	}
	if len(vols) != 0 {
		t.Errorf("got %v, want no guest disks without VM.Config.Disk on their guest", vols)
	}
	if rows := dataList(t, e.as(auth, "GET", "/nodes/pve/storage/local/content")); len(rows) != 1 {
		t.Errorf("got %v, want the container template (Datastore.Audit is enough)", rows)
	}
	e.grant("/vms/9000", "PVEVMAdmin", "users", "ci@pve")
	if rows := dataList(t, e.as(auth, "GET", "/nodes/pve/storage/local-lvm/content")); len(rows) == 0 {
		t.Error("got no disks of VM 9000 with VM.Config.Disk on it")
	}
	tmpl := url.PathEscape("local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst")
	wantDenied(t, e.as(auth, "DELETE", "/nodes/pve/storage/local/content/"+tmpl), "/storage/local, Datastore.Allocate")

	e.grant("/pool/dev", "PVEPoolAdmin", "users", "ci@pve")
	e.wait(e.task("POST", "/nodes/pve/qemu/9000/clone", "newid", "101"))
	wantDenied(t, e.as(auth, "PUT", "/pools", "poolid", "dev", "vms", "101"), "/vms/101, Permissions.Modify|VM.Allocate")
	if r := e.as(auth, "PUT", "/pools", "poolid", "dev", "vms", "9000"); r.Status != 200 {
		t.Errorf("adding VM 9000 with VM.Allocate on it: got %d %q, want 200", r.Status, r.Message)
	}
}
