package planner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
	"github.com/pvectl/pvectl/pkg/spec"
)

// ambiguousKinds are one create of every kind that makes an object, the
// request that makes it, and how many objects of its name PVE holds.
var ambiguousKinds = []ambiguousCase{
	{"QemuVM without vmid", "kind: QemuVM\nname: amb\nspec:\n  memory: 512\n", "POST", "/nodes/pve/qemu", guestsNamed("amb")},
	{"QemuVM with vmid", "kind: QemuVM\nname: amb\nspec:\n  vmid: 120\n  memory: 512\n", "POST", "/nodes/pve/qemu", guestsNamed("amb")},
	{"LxcContainer", "kind: LxcContainer\nname: amb\nspec:\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n  rootfs: local-lvm:4\n", "POST", "/nodes/pve/lxc", guestsNamed("amb")},
	{"QemuVM clone", "kind: QemuVM\nname: amb\nspec:\n  image: 24.04-cloud\n", "POST", "/nodes/pve/qemu/9000/clone", guestsNamed("amb")},
	{"Pool", "kind: Pool\nname: amb\nspec:\n  comment: made once\n", "POST", "/pools", exists(func(ctx context.Context, cl *pve.Client) (bool, error) {
		_, err := cl.Pool(ctx, "amb")
		return err == nil, ignoreNotFound(err)
	})},
	{"Storage", "kind: Storage\nname: amb\nspec:\n  type: dir\n  path: /srv/amb\n  content: iso\n", "POST", "/storage", exists(func(ctx context.Context, cl *pve.Client) (bool, error) {
		rows, err := cl.Storages(ctx)
		return storageObj(rows, "amb").Exists, err
	})},
	{"User", "kind: User\nname: amb@pve\nspec:\n  comment: made once\n", "POST", "/access/users", exists(func(ctx context.Context, cl *pve.Client) (bool, error) {
		users, err := cl.Users(ctx)
		return userObj(users, "amb@pve").Exists, err
	})},
	{"LinuxBridge", "kind: LinuxBridge\nname: vmbr7\nspec:\n  node: pve\n  iface: vmbr7\n", "POST", "/nodes/pve/network", exists(func(ctx context.Context, cl *pve.Client) (bool, error) {
		ifaces, _, err := cl.NetworkList(ctx, "pve")
		for _, i := range ifaces {
			if i.Get("iface") == "vmbr7" {
				return true, err
			}
		}
		return false, err
	})},
	{"BondInterface", "kind: BondInterface\nname: bond0\nspec:\n  node: pve\n  iface: bond0\n  slaves: eno3 eno4\n", "POST", "/nodes/pve/network", ifaceThere("bond0")},
	{"DownloadedImage", "kind: DownloadedImage\nname: img\nspec:\n  node: pve\n  storage: local\n  content: iso\n  filename: amb.iso\n  url: https://127.0.0.1/amb.iso\n",
		"POST", "/nodes/pve/storage/local/download-url", volumes("local", "iso")},
	{"ConfigDriveISO", "kind: ConfigDriveISO\nname: seed-amb\nspec:\n  storage: local\n  hostname: amb\n", "POST", "/nodes/pve/storage/local/upload", volumes("local", "iso")},
	{"APIToken", "kind: User\nname: amb@pve\n---\nkind: APIToken\nname: amb\nspec:\n  userid: amb@pve\n  comment: made once\n", "POST", "/access/users/amb@pve/token/amb", exists(func(ctx context.Context, cl *pve.Client) (bool, error) {
		users, err := cl.Users(ctx)
		r := &spec.Resource{Kind: spec.KindAPIToken, Name: "amb", Params: spec.ParamsOf(map[string]string{"userid": "amb@pve"})}
		return err == nil && tokenObj(users, r).Exists, err
	})},
	{"ACL", "kind: User\nname: ci@pve\n---\nkind: Pool\nname: amb\n---\nkind: ACL\nname: amb\nspec:\n  path: /pool/amb\n  users: ci@pve\n  roles: PVEAuditor\n", "PUT", "/access/acl", exists(func(ctx context.Context, cl *pve.Client) (bool, error) {
		entries, err := cl.ACL(ctx)
		for _, e := range entries {
			if e.Path == "/pool/amb" && e.Role == "PVEAuditor" {
				return true, err
			}
		}
		return false, err
	})},
}

func ifaceThere(name string) func(context.Context, *pve.Client) (int, error) {
	return exists(func(ctx context.Context, cl *pve.Client) (bool, error) {
		ifaces, _, err := cl.NetworkList(ctx, "pve")
		for _, i := range ifaces {
			if i.Get("iface") == name {
				return true, err
			}
		}
		return false, err
	})
}

func volumes(storage, content string) func(context.Context, *pve.Client) (int, error) {
	return func(ctx context.Context, cl *pve.Client) (int, error) {
		vs, err := cl.StorageContent(ctx, "pve", storage, content)
		return len(vs), err
	}
}

func guestsNamed(name string) func(context.Context, *pve.Client) (int, error) {
	return func(ctx context.Context, cl *pve.Client) (int, error) {
		// A guest's name in /cluster/resources lags (pvestatd): its
		// config tells.
		rs, err := cl.ClusterResources(ctx, "vm")
		n := 0
		for _, r := range rs {
			cfg, cerr := cl.GuestConfig(ctx, pve.GuestType(r.Type), r.Node, r.VMID)
			if cerr != nil {
				return n, cerr
			}
			if cfg.Get("name") == name || cfg.Get("hostname") == name {
				n++
			}
		}
		return n, err
	}
}

func exists(f func(context.Context, *pve.Client) (bool, error)) func(context.Context, *pve.Client) (int, error) {
	return func(ctx context.Context, cl *pve.Client) (int, error) {
		ok, err := f(ctx, cl)
		if ok {
			return 1, err
		}
		return 0, err
	}
}

func ignoreNotFound(err error) error {
	if pve.IsNotFound(err) {
		return nil
	}
	return err
}

// Issue 17: a create of every kind that PVE carries out and whose answer
// is replaced by one that does not prove a refusal (a bare 500, 502, 503,
// 504, 595, 596, 599, a reset, no answer) is applied once: the apply
// succeeds, the request was sent once, PVE holds exactly one object, and
// the next plan is clean.
func TestAmbiguousCreateEveryKind(t *testing.T) {
	testAmbiguousCreates(t, ambiguousKinds, nil)
}

// ambiguousCase is one create of a kind, the request that makes it, and
// how many objects of its name PVE holds.
type ambiguousCase struct {
	name   string
	yaml   string
	method string
	path   string // under /api2/json
	count  func(ctx context.Context, cl *pve.Client) (int, error)
}

// testAmbiguousCreates applies each case with its create faulted by each
// ambiguous answer, on a simulator of nodes (nil: one node).
func testAmbiguousCreates(t *testing.T, cases []ambiguousCase, nodes []string) {
	for _, k := range cases {
		for _, fault := range simtest.AmbiguousFaults {
			t.Run(k.name+"/"+fault, func(t *testing.T) {
				f := &simtest.CarriedOut{Fault: fault, Match: func(r *http.Request, _ []byte) bool {
					return r.Method == k.method && r.URL.Path == "/api2/json"+k.path
				}}
				s := simtest.Start(t, simtest.Options{
					Sim:         pvesim.Options{Nodes: nodes, TokenID: simToken, TokenSecret: simSecret, TaskDuration: time.Millisecond, Seed: 1, DataDir: t.TempDir()},
					Wrap:        f.Wrap,
					Conformance: true, // the look-ups are valid PVE requests too
					// The "timeout" fault waits for it; a loaded CI machine
					// answers the read-backs well within a second.
					ClientOptions: []pve.Option{pve.WithRequestTimeout(time.Second)},
				})
				sim := &simClients{cl: s.Client, conn: &spec.Connection{URL: s.URL, Nodes: []string{"pve"}}}
				set := loadSpec(t, k.yaml)
				h := &recHooks{}
				_, err := engine.Apply(context.Background(), sim, planFor(t, sim, set, engine.Options{}), engine.ApplyOptions{Hooks: h})
				if err != nil {
					t.Fatalf("apply: %v\nmessages:\n%s", err, strings.Join(h.messages, "\n"))
				}
				if f.Fired() != 1 || f.Seen() != 1 {
					t.Errorf("the create was sent %d times (%d faulted), want once", f.Seen(), f.Fired())
				}
				n, err := k.count(context.Background(), s.Client)
				if err != nil || n != 1 {
					t.Errorf("PVE holds %d objects (%v), want 1", n, err)
				}
				for _, c := range planFor(t, sim, set, engine.Options{}).Changes {
					if c.Action != engine.NoOp {
						t.Errorf("next plan: %s %s %v, want it clean", c.Action, c.Address, c.Reasons)
					}
				}
			})
		}
	}
}

// An update or delete that PVE carried out, answered by a fault that does
// not prove a refusal, is read back and counted done: the apply succeeds
// with nothing sent twice, and the next plan is clean.
func TestAmbiguousUpdateAndDelete(t *testing.T) {
	testAmbiguousChanges(t, []ambiguousChange{
		{"Pool update", "kind: Pool\nname: amb\nspec:\n  comment: one\n", "kind: Pool\nname: amb\nspec:\n  comment: two\n", "PUT", "/pools"},
		{"User update", "kind: User\nname: amb@pve\nspec:\n  comment: one\n", "kind: User\nname: amb@pve\nspec:\n  comment: two\n", "PUT", "/access/users/amb@pve"},
		{"Pool delete", "kind: Pool\nname: amb\n", "kind: Pool\nname: amb\nstate: absent\n", "DELETE", "/pools"},
	}, nil)
}

// ambiguousChange is a spec applied first (before), then changed (after)
// with the request method path faulted.
type ambiguousChange struct{ name, before, after, method, path string }

// testAmbiguousChanges applies each case's before, then its after with
// the request faulted (500, 596, a reset) on a simulator of nodes (nil:
// one node): sent once, the apply succeeds, the next plan is clean.
func testAmbiguousChanges(t *testing.T, cases []ambiguousChange, nodes []string) {
	for _, tc := range cases {
		for _, fault := range []string{"500", "596", "reset"} {
			t.Run(tc.name+"/"+fault, func(t *testing.T) {
				var armed atomic.Bool // the set-up's own writes pass
				f := &simtest.CarriedOut{Fault: fault, Match: func(r *http.Request, _ []byte) bool {
					return armed.Load() && r.Method == tc.method && r.URL.Path == "/api2/json"+tc.path
				}}
				s := simtest.Start(t, simtest.Options{Sim: pvesim.Options{Nodes: nodes, TokenID: simToken, TokenSecret: simSecret, TaskDuration: time.Millisecond, Seed: 1}, Wrap: f.Wrap, Conformance: true})
				sim := &simClients{cl: s.Client, conn: &spec.Connection{URL: s.URL, Nodes: []string{"pve"}}}
				applyPlan(t, sim, planFor(t, sim, loadSpec(t, tc.before), engine.Options{}))
				after := loadSpec(t, tc.after)
				armed.Store(true)
				h := &recHooks{}
				if _, err := engine.Apply(context.Background(), sim, planFor(t, sim, after, engine.Options{}), engine.ApplyOptions{Hooks: h}); err != nil {
					t.Fatalf("apply: %v\nmessages:\n%s", err, strings.Join(h.messages, "\n"))
				}
				if f.Seen() != 1 {
					t.Errorf("sent %d times, want once", f.Seen())
				}
				wantConverged(t, t.Errorf, sim, after, "next plan")
			})
		}
	}
}

// A 500 with a message, after PVE carried the create out (a handler that
// died after its work): looked at and adopted, not sent again; PVE's
// refusal with a message is the apply's error, not sent again either.
func TestAmbiguousCreateHandlerDiedAfterWork(t *testing.T) {
	for _, tc := range []struct {
		name   string
		carry  bool
		wantOK bool
	}{
		{"carried out", true, true},
		{"refused", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := 0
			wrap := func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method != http.MethodPost || r.URL.Path != "/api2/json/pools" {
						next.ServeHTTP(w, r)
						return
					}
					seen++
					if tc.carry {
						next.ServeHTTP(httptest.NewRecorder(), r)
					}
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusInternalServerError)
					_, _ = w.Write([]byte(`{"data":null,"message":"cfs-lock 'file-user_cfg' error: got lock request timeout"}`))
				})
			}
			s := simtest.Start(t, simtest.Options{Sim: pvesim.Options{TokenID: simToken, TokenSecret: simSecret, TaskDuration: time.Millisecond, Seed: 1}, Wrap: wrap})
			sim := &simClients{cl: s.Client, conn: &spec.Connection{URL: s.URL, Nodes: []string{"pve"}}}
			set := loadSpec(t, "kind: Pool\nname: amb\n")
			_, err := engine.Apply(context.Background(), sim, planFor(t, sim, set, engine.Options{}), engine.ApplyOptions{Hooks: &recHooks{}})
			if (err == nil) != tc.wantOK || seen != 1 {
				t.Errorf("apply: %v after %d sends, want ok=%v after 1", err, seen, tc.wantOK)
			}
		})
	}
}
