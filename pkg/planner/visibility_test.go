package planner

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
)

const visibSpec = `kind: QemuVM
name: db
spec:
  memory: 512
`

// visibSetup makes web (100) and db (101) as the admin and a
// privilege-separated token that may administer /vms; hide then applies
// the test's own ACLs on top.
func visibSetup(t *testing.T, hide func(admin *simClients, user, token string)) (*simClients, *simClients) {
	t.Helper()
	admin := newSim(t)
	ctx := context.Background()
	for _, g := range []struct{ id, name string }{{"100", "web"}, {"101", "db"}} {
		if err := admin.cl.CreateQemu(ctx, "pve", url.Values{"vmid": {g.id}, "name": {g.name}, "memory": {"512"}}); err != nil {
			t.Fatal(err)
		}
	}
	tok, id := asToken(t, admin, "ci@pve", "plan")
	grantBoth(t, admin, "ci@pve", id, "/vms", "PVEVMAdmin")
	hide(admin, "ci@pve", id)
	return admin, tok
}

func putACL(t *testing.T, admin *simClients, kv ...string) {
	t.Helper()
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	if err := admin.cl.Do(context.Background(), http.MethodPut, "/access/acl", v, nil); err != nil {
		t.Fatal(err)
	}
}

// TestSimVisibilityHiddenGuest: a guest the token may not see is never
// taken for absent. A spec that finds db by name while db (101) is hidden
// from the token refuses, naming /vms/101 and what to grant; nothing is
// created. Before this check the plan created a second db.
func TestSimVisibilityHiddenGuest(t *testing.T) {
	tests := []struct {
		name  string
		hide  func(t *testing.T, admin *simClients, user, token string)
		wants []string
	}{
		{"NoAccess on the guest (the listing leaves the path out)", func(t *testing.T, admin *simClients, user, token string) {
			putACL(t, admin, "path", "/vms/101", "roles", "NoAccess", "tokens", token)
		}, []string{"cannot see /vms/101", "pveum acl delete /vms/101 --roles NoAccess --tokens 'ci@pve!plan'", "--users ci@pve"}},
		{"a narrower role on the guest", func(t *testing.T, admin *simClients, user, token string) {
			if err := admin.cl.Do(context.Background(), http.MethodPost, "/access/roles", url.Values{"roleid": {"PowerOnly"}, "privs": {"VM.PowerMgmt"}}, nil); err != nil {
				t.Fatal(err)
			}
			putACL(t, admin, "path", "/vms/101", "roles", "PowerOnly", "tokens", token)
		}, []string{"cannot see /vms/101"}},
		{"VM.Audit on /vms that does not propagate", func(t *testing.T, admin *simClients, user, token string) {
			putACL(t, admin, "path", "/vms", "roles", "PVEVMAdmin", "tokens", token, "propagate", "0")
		}, []string{"VM.Audit on /vms without propagation", "--propagate 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			admin, tok := visibSetup(t, func(admin *simClients, user, token string) { tt.hide(t, admin, user, token) })
			set := loadSpec(t, visibSpec)
			_, err := engine.PlanLive(context.Background(), tok, set, engine.Options{})
			if err == nil {
				t.Fatal("plan with db hidden from the token: no error, want a refusal")
			}
			for _, want := range append(tt.wants, "QemuVM/db", "refusing to create the VM \"db\"") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("got %v\nwant it to say %q", err, want)
				}
			}
			if n := countNamed(t, admin.cl, "db"); n != 1 {
				t.Errorf("%d guests named db, want 1", n)
			}
		})
	}
}

// TestSimVisibilityNothingHidden: with every guest visible (or the hidden
// one not below nextid's answer and its ACL unreadable, which PVE tells
// the token nothing about) a create by name plans as before, at the cost
// of /cluster/nextid and /access/acl once.
func TestSimVisibilityNothingHidden(t *testing.T) {
	_, tok := visibSetup(t, func(*simClients, string, string) {})
	set := loadSpec(t, `kind: QemuVM
name: cache
spec:
  memory: 512
`)
	p := livePlan(t, tok, set, engine.Options{})
	if s := p.Summary(); s.Create != 1 {
		t.Errorf("got %+v, want cache created", s)
	}
}

// TestSimVisibilityHiddenPool: a pool a create relies on that is hidden by
// a NoAccess below a propagated Pool.Audit is not taken for one the token
// may see: the listing would give /pool/team the rights of /pool.
func TestSimVisibilityHiddenPool(t *testing.T) {
	admin := newSim(t)
	tok, id := asToken(t, admin, "ci@pve", "plan")
	grantBoth(t, admin, "ci@pve", id, "/vms", "PVEVMAdmin")
	grantBoth(t, admin, "ci@pve", id, "/pool", "PVEPoolAdmin")
	if err := admin.cl.Do(context.Background(), http.MethodPost, "/pools", url.Values{"poolid": {"team"}}, nil); err != nil {
		t.Fatal(err)
	}
	putACL(t, admin, "path", "/pool/team", "roles", "NoAccess", "tokens", id)
	set := loadSpec(t, `kind: QemuVM
name: web
spec:
  vmid: 150
  memory: 512
  pool: team
`)
	_, err := engine.PlanLive(context.Background(), tok, set, engine.Options{})
	if err == nil || !strings.Contains(err.Error(), "lacks Pool.Audit on /pool/team") {
		t.Fatalf("got %v, want a refusal naming Pool.Audit on /pool/team", err)
	}
}

func countNamed(t *testing.T, cl *pve.Client, name string) int {
	t.Helper()
	// The node's list is current (/cluster/resources names guests from
	// status data that lags).
	rows, err := cl.NodeGuests(context.Background(), pve.QEMU, "pve")
	if err != nil {
		t.Fatal(err)
	}
	return countWhere(rows, func(r pve.ClusterResource) bool { return r.Name == name })
}

// TestSimVisibilityHiddenStorage: a storage a new disk needs, hidden by a
// NoAccess below a propagated grant on /storage, is not taken for one the
// token may allocate on.
func TestSimVisibilityHiddenStorage(t *testing.T) {
	admin := newSim(t)
	tok, id := asToken(t, admin, "ci@pve", "plan")
	grantBoth(t, admin, "ci@pve", id, "/vms", "PVEVMAdmin")
	grantBoth(t, admin, "ci@pve", id, "/storage", "PVEDatastoreUser")
	putACL(t, admin, "path", "/storage/local-lvm", "roles", "NoAccess", "tokens", id)
	set := loadSpec(t, "kind: QemuVM\nname: web\nspec:\n  vmid: 150\n  memory: 512\n  scsi0: local-lvm:4\n")
	_, err := engine.PlanLive(context.Background(), tok, set, engine.Options{})
	if err == nil || !strings.Contains(err.Error(), "lacks Datastore.AllocateSpace on /storage/local-lvm") {
		t.Fatalf("got %v, want a refusal naming Datastore.AllocateSpace on /storage/local-lvm", err)
	}
}
