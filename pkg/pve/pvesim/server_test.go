package pvesim_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"

	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

func TestAuthAndUnknownPaths(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	tests := []struct {
		name, auth, path string
		status           int
		message          string
	}{
		{"no header", "", "/version", 401, "No ticket"},
		{"wrong secret", "PVEAPIToken=" + testToken + "=nope", "/version", 401, "Authentication failed!"},
		{"wrong token", "PVEAPIToken=root@pam!other=" + testSecret, "/version", 401, "Authentication failed!"},
		{"not a token id", "PVEAPIToken=root@pam=" + testSecret, "/version", 401, "Authentication failed!"},
		{"ticket scheme", "PVEAuthCookie=abc", "/version", 401, "Authentication failed!"},
		{"token with a space", "PVEAPIToken " + testToken + "=" + testSecret, "/version", 200, ""},
		{"unknown path", "PVEAPIToken=" + testToken + "=" + testSecret, "/foo", 501, "Method 'GET /foo' not implemented"},
		{"schema path without a handler", "PVEAPIToken=" + testToken + "=" + testSecret, "/cluster/ha/groups", 501,
			"Method 'GET /cluster/ha/groups' not implemented"},
		{"unescaped slash in a volume is routed", "PVEAPIToken=" + testToken + "=" + testSecret, "/nodes/pve/storage/local/content/local:vztmpl/x.tar.zst",
			500, "volume 'local:vztmpl/x.tar.zst' does not exist"},
		{"ok", "PVEAPIToken=" + testToken + "=" + testSecret, "/version", 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.raw("GET", tc.path, nil, tc.auth)
			if r.Status != tc.status || r.Message != tc.message {
				t.Errorf("got %d %q, want %d %q", r.Status, r.Message, tc.status, tc.message)
			}
			switch {
			case tc.status == 401 && !r.Empty:
				t.Errorf("got a body on a 401, want none (pve-http-server)")
			case tc.status != 200 && tc.status != 401 && string(r.Data) != "null":
				t.Errorf("got data %s on error, want null", r.Data)
			}
		})
	}
	if r := e.call("GET", "/nodes/nope/qemu"); r.Status != 500 || !strings.Contains(r.Message, "hostname lookup 'nope' failed") {
		t.Errorf("got %d %q for an unknown node, want 500 hostname lookup", r.Status, r.Message)
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		opts pvesim.Options
	}{
		{"no secret", pvesim.Options{}},
		{"bad token id", pvesim.Options{TokenID: "root", TokenSecret: "x"}},
		{"bad node", pvesim.Options{Nodes: []string{"-bad"}, TokenSecret: "x"}},
		{"bad error rate", pvesim.Options{ErrorRate: 2, TokenSecret: "x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := pvesim.New(tc.opts); err == nil {
				t.Errorf("got nil error, want one")
			}
		})
	}
}

func TestSeedAndClusterResources(t *testing.T) {
	e := newEnv(t, pvesim.Options{Nodes: []string{"pve", "pve2"}})
	ids := e.rowsBy("id", "/cluster/resources")
	for _, id := range []string{"qemu/9000", "node/pve", "node/pve2", "storage/pve/local", "storage/pve2/local-lvm"} {
		if ids[id] == nil {
			t.Errorf("got no %s row in %v", id, ids)
		}
	}
	if vm := ids["qemu/9000"]; vm["template"] != float64(1) || vm["name"] != "ubuntu-24.04-cloud" || vm["node"] != "pve" || vm["vmid"] != float64(9000) {
		t.Errorf("got template row %v", vm)
	}
	rows := e.rows("/cluster/resources", "type", "vm")
	if len(rows) != 1 || rows[0]["type"] != "qemu" {
		t.Errorf("got type=vm rows %v, want only qemu/9000", rows)
	}

	// PVE answers a string here although its schema says integer.
	var next string
	e.ok(&next, "GET", "/cluster/nextid")
	if next != "100" {
		t.Errorf("got nextid %q, want \"100\"", next)
	}
	e.ok(&next, "GET", "/cluster/nextid", "vmid", "150")
	if next != "150" {
		t.Errorf("got nextid %q for a free vmid=150, want \"150\"", next)
	}
	r := e.call("GET", "/cluster/nextid", "vmid", "9000")
	if r.Status != 400 || r.Errors["vmid"] != "VM 9000 already exists" {
		t.Errorf("got %d %v, want 400 vmid already exists", r.Status, r.Errors)
	}

	content := e.rows("/nodes/pve/storage/local/content", "content", "vztmpl")
	if len(content) != 1 || content[0]["volid"] != "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst" {
		t.Errorf("got vztmpl content %v", content)
	}
	dns := e.object("/nodes/pve/dns")
	if dns["search"] != "local" {
		t.Errorf("got dns %v, want search local", dns)
	}
	// resolv.conf keeps nameservers in order, so a lone dns2 reads back as
	// dns1 and a repeat is written once (pve-common INotify.pm).
	e.ok(nil, "PUT", "/nodes/pve/dns", "search", "example.org", "dns2", "1.1.1.1", "dns3", "1.1.1.1")
	dns = nil
	e.ok(&dns, "GET", "/nodes/pve/dns")
	if diff := cmp.Diff(map[string]any{"search": "example.org", "dns1": "1.1.1.1"}, dns); diff != "" {
		t.Errorf("dns after PUT (-want +got)\n%s", diff)
	}
}

func TestNetworkStaging(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	r := e.ok(nil, "GET", "/nodes/pve/network")
	if r.Changes != nil {
		t.Fatalf("got changes %q on a fresh node, want none", *r.Changes)
	}
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "vmbr1", "type", "bridge", "bridge_ports", "eno2",
		"bridge_vlan_aware", "1", "autostart", "1", "comments", "lab")

	tests := []struct {
		name  string
		kv    []string
		param string
	}{
		{"exists", []string{"iface", "vmbr1", "type", "bridge"}, "iface"},
		{"port in use", []string{"iface", "vmbr2", "type", "bridge", "bridge_ports", "eno1"}, "bridge_ports"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call("POST", "/nodes/pve/network", tc.kv...)
			if r.Status != 400 || r.Errors[tc.param] == "" {
				t.Errorf("got %d %q %v, want 400 errors.%s", r.Status, r.Message, r.Errors, tc.param)
			}
		})
	}
	// A missing port is found by the writer: a plain 500.
	r = e.call("POST", "/nodes/pve/network", "iface", "vmbr2", "type", "bridge", "bridge_ports", "eno9")
	if want := "bridge 'vmbr2' - unable to find bridge port 'eno9'"; r.Status != 500 || r.Message != want {
		t.Errorf("got %d %q %v for a missing port, want 500 %q", r.Status, r.Message, r.Errors, want)
	}

	var items []map[string]any
	r = e.ok(&items, "GET", "/nodes/pve/network", "type", "bridge")
	if r.Changes == nil || !strings.Contains(*r.Changes, "+auto vmbr1") || !strings.Contains(*r.Changes, "+\tbridge-ports eno2") {
		t.Fatalf("got changes %v, want a diff adding vmbr1", r.Changes)
	}
	if len(items) != 2 || items[1]["iface"] != "vmbr1" || items[1]["active"] != nil || items[1]["bridge_vlan_aware"] != float64(1) {
		t.Errorf("got bridges %v, want vmbr0 and inactive vlan-aware vmbr1", items)
	}

	e.run("PUT", "/nodes/pve/network")
	var one map[string]any
	r = e.ok(&one, "GET", "/nodes/pve/network/vmbr1")
	if one["active"] != float64(1) || one["comments"] != "lab\n" {
		t.Errorf("got vmbr1 %v after apply, want active with comments", one)
	}
	if r := e.ok(nil, "GET", "/nodes/pve/network"); r.Changes != nil {
		t.Errorf("got changes %q after apply, want none", *r.Changes)
	}

	e.ok(nil, "DELETE", "/nodes/pve/network/vmbr1")
	if r := e.ok(nil, "GET", "/nodes/pve/network"); r.Changes == nil || !strings.Contains(*r.Changes, "-auto vmbr1") {
		t.Errorf("got changes %v after delete, want a diff removing vmbr1", r.Changes)
	}
	e.ok(nil, "DELETE", "/nodes/pve/network")
	if r := e.ok(nil, "GET", "/nodes/pve/network/vmbr1"); r.Changes != nil {
		t.Errorf("got changes after revert, want none")
	}
}

func TestPools(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/pools", "poolid", "lab", "comment", "Lab")
	if r := e.call("POST", "/pools", "poolid", "lab"); r.Status != 500 {
		t.Errorf("got %d creating a duplicate pool, want 500", r.Status)
	}
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "pool", "lab")
	e.ok(nil, "PUT", "/pools", "poolid", "lab", "vms", "9000", "storage", "local")

	var pools []struct {
		PoolID  string           `json:"poolid"`
		Comment string           `json:"comment"`
		Members []map[string]any `json:"members"`
	}
	e.ok(&pools, "GET", "/pools", "poolid", "lab")
	var ids []string
	for _, m := range pools[0].Members {
		ids = append(ids, m["id"].(string))
	}
	if diff := cmp.Diff([]string{"qemu/100", "qemu/9000", "storage/pve/local"}, ids); diff != "" || pools[0].Comment != "Lab" {
		t.Errorf("members (-want +got)\n%s comment %q", diff, pools[0].Comment)
	}
	r := e.call("DELETE", "/pools", "poolid", "lab")
	if want := "delete pool failed: pool 'lab' is not empty (contains VM 100)"; r.Status != 500 || r.Message != want {
		t.Errorf("got %d %q deleting a non-empty pool, want 500 %q", r.Status, r.Message, want)
	}
	e.ok(nil, "PUT", "/pools/lab", "vms", "100,9000", "storage", "local", "delete", "1")
	p := e.object("/pools/lab")
	// Pool.pm read_pool answers index's row: poolid too.
	if diff := cmp.Diff(map[string]any{"comment": "Lab", "members": []any{}, "poolid": "lab"}, p); diff != "" {
		t.Errorf("pool after removing members (-want +got)\n%s", diff)
	}
	e.ok(nil, "DELETE", "/pools/lab")
	e.ok(&pools, "GET", "/pools")
	if len(pools) != 0 {
		t.Errorf("got pools %v after delete, want none", pools)
	}
}

func TestStateFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	e := newEnv(t, pvesim.Options{StateFile: path})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "name", "kept", "net0", "virtio,bridge=vmbr0")
	e.ok(nil, "POST", "/pools", "poolid", "p1")
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "vmbr1", "type", "bridge")
	before := e.config("100")
	e.Server.Close()

	e2 := newEnv(t, pvesim.Options{StateFile: path})
	if diff := cmp.Diff(before, e2.config("100")); diff != "" {
		t.Errorf("config after reload (-want +got)\n%s", diff)
	}
	if !e2.Server.HasPool("p1") {
		t.Errorf("got no pool p1 after reload")
	}
	if r := e2.ok(nil, "GET", "/nodes/pve/network"); r.Changes == nil {
		t.Errorf("got no staged network changes after reload, want them kept")
	}
}

func TestFaultInjection(t *testing.T) {
	t.Run("error rate", func(t *testing.T) {
		e := newEnv(t, pvesim.Options{ErrorRate: 1})
		for range 10 {
			if r := e.call("GET", "/version"); r.Status != 500 && r.Status != 596 {
				t.Fatalf("got %d, want an injected 500/596", r.Status)
			}
		}
	})
	t.Run("lock contention", func(t *testing.T) {
		e := newEnv(t, pvesim.Options{LockContention: 1})
		// qemu-server's clone locks in the worker: the task fails.
		st := e.wait(e.task("POST", "/nodes/pve/qemu/9000/clone", "newid", "101"))
		if st.ExitStatus != "can't lock file '/var/lock/qemu-server/lock-9000.conf' - got timeout" {
			t.Errorf("got exit status %q, want the lock timeout", st.ExitStatus)
		}
		e.ok(nil, "GET", "/version")
	})
}

func TestTaskList(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100")
	e.run("POST", "/nodes/pve/qemu/100/status/start")
	rows := e.rows("/nodes/pve/tasks", "vmid", "100")
	var types []string
	for _, r := range rows {
		types = append(types, fmt.Sprint(r["type"], "=", r["status"]))
	}
	if diff := cmp.Diff([]string{"qmstart=OK", "qmcreate=OK"}, types); diff != "" {
		t.Errorf("tasks (-want +got)\n%s", diff)
	}
	for upid, want := range map[string]string{
		"UPID:pve:00000001:00000001:00000001:x::root@pam:": "no such task",
		"UPID:pve:nonsense": "unable to parse worker upid",
	} {
		if r := e.call("GET", "/nodes/pve/tasks/"+url.PathEscape(upid)+"/status"); r.Status != 400 || r.Errors["upid"] != want {
			t.Errorf("got %d %v for task %s, want 400 errors.upid %q", r.Status, r.Errors, upid, want)
		}
	}
}

func TestSelfSignedCert(t *testing.T) {
	cert, fp, err := pvesim.SelfSignedCert([]string{"127.0.0.1", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(cert.Leaf.Raw)
	var want []string
	for _, b := range sum {
		want = append(want, fmt.Sprintf("%02X", b))
	}
	if fp != strings.Join(want, ":") {
		t.Errorf("got fingerprint %s, want %s", fp, strings.Join(want, ":"))
	}
	// Served as `pvectl sim --tls` serves it, pinned as pvectl pins it.
	e := startEnv(t, simtest.Options{TLS: true})
	if _, err := e.Client.Version(context.Background()); err != nil {
		t.Errorf("pinned client: %v", err)
	}
	var seen string
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, // verified by pinning below, as pvectl does
		VerifyConnection: func(cs tls.ConnectionState) error {
			seen = pvesim.Fingerprint(cs.PeerCertificates[0].Raw)
			return nil
		},
	}}}
	req, _ := http.NewRequest("GET", e.URL+"/api2/json/version", nil)
	req.Header.Set("Authorization", "PVEAPIToken="+testToken+"="+testSecret)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || seen != e.Fingerprint {
		t.Errorf("got status %d fingerprint %s, want 200 %s", resp.StatusCode, seen, e.Fingerprint)
	}
}

func TestConcurrentCreates(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	const n = 8
	upids := make(chan string, n)
	errs := make(chan string, n)
	for i := range n {
		go func() {
			params := url.Values{"vmid": {fmt.Sprint(300 + i)}, "net0": {"virtio,bridge=vmbr0"}, "scsi0": {"local-lvm:1"}}
			r := e.raw("POST", "/nodes/pve/qemu", params, "PVEAPIToken="+testToken+"="+testSecret)
			if r.Status != 200 {
				errs <- fmt.Sprintf("create %d: got %d %s", 300+i, r.Status, r.Message)
				upids <- ""
				return
			}
			var upid string
			jsonUnmarshal(r.Data, &upid)
			upids <- upid
		}()
	}
	for range n {
		if u := <-upids; u != "" {
			e.wait(u)
		}
	}
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
	macs := map[string]bool{}
	for i := range n {
		c := e.config(fmt.Sprint(300 + i))
		_, mac := pvesim.NetModelMAC(c["net0"].(string))
		if macs[mac] {
			t.Errorf("got duplicate MAC %s", mac)
		}
		macs[mac] = true
	}
}

func TestStateDropsUnfinishedCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	e := newEnv(t, pvesim.Options{StateFile: path, TaskDuration: time.Hour, Seed: 3})
	e.task("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "local-lvm:1")
	e.task("POST", "/nodes/pve/qemu/9000/clone", "newid", "101")
	e.Server.Close()

	e2 := newEnv(t, pvesim.Options{StateFile: path})
	for _, id := range []int{100, 101} {
		if r := e2.call("GET", fmt.Sprintf("/nodes/pve/qemu/%d/config", id)); r.Status != 500 {
			t.Errorf("got %d for VM %d whose create or clone never finished, want it gone (500)", r.Status, id)
		}
		if vols := e2.Server.VolumesOf(id); len(vols) != 0 {
			t.Errorf("got leftover volumes %v", vols)
		}
	}
}

// A state file that cannot be written fails New instead of losing every
// change silently.
func TestStateFileUnwritable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing-dir", "state.json")
	_, err := pvesim.New(pvesim.Options{TokenSecret: "s", StateFile: path})
	if err == nil || !strings.Contains(err.Error(), "state file") {
		t.Fatalf("New with an unwritable state file: got %v, want an error", err)
	}
}

// The state file follows the changes while the simulator runs (in
// batches, without waiting for Close), and is whole JSON whenever read.
func TestStateFileWrittenWhileRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	e := newEnv(t, pvesim.Options{StateFile: path})
	e.ok(nil, "POST", "/pools", "poolid", "p1")
	for range 500 { // bounded: 10 s
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Pools map[string]any `json:"pools"`
		}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("state file is not whole JSON: %v", err)
		}
		if st.Pools["p1"] != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("pool p1 never reached the state file while the simulator ran")
}
