package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve"
)

// The acceptance run: apply example 01, a clean second plan, a memory
// change seen as exactly one update, and destroy with the network committed.
func TestE2EBridgeAndVMLifecycle(t *testing.T) {
	env := startSim(t)
	ctx := context.Background()
	f := example(t, "01-bridge-and-vm.yaml", nil)

	env.mustRun(0, "apply", "-f", f, "--auto-approve")

	st, err := env.client.QemuStatus(ctx, "pve", 100)
	if err != nil {
		t.Fatalf("VM 100 after apply: %v", err)
	}
	if st.Status != "running" {
		t.Errorf("VM 100 status = %q, want running", st.Status)
	}
	assertIface(t, env, "vmbr1", true)

	env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")

	// memory 2048 → 4096: exactly one update, with a memory diff.
	f2 := example(t, "01-bridge-and-vm.yaml", func(s string) string {
		return strings.Replace(s, "memory: 2048", "memory: 4096", 1)
	})
	r := env.mustRun(0, "plan", "-f", f2, "--json")
	p := parsePlan(t, r.stdout)
	if p.FormatVersion != "1" {
		t.Errorf("format_version = %q, want 1", p.FormatVersion)
	}
	var updates int
	for _, c := range p.Changes {
		switch c.Action {
		case "noop":
		case "update":
			updates++
			if c.Address != "QemuVM/app-vm-1" {
				t.Errorf("update of %s, want only QemuVM/app-vm-1", c.Address)
			}
			if len(c.Diff) != 1 || c.Diff[0].Path != "memory" {
				t.Errorf("diff = %+v, want exactly one memory change", c.Diff)
			}
		default:
			t.Errorf("unexpected %s of %s", c.Action, c.Address)
		}
	}
	if updates != 1 || p.Summary["update"] != 1 {
		t.Errorf("got %d updates (summary %v), want 1", updates, p.Summary)
	}
	env.mustRun(2, "plan", "-f", f2, "--detailed-exitcode")
	r = env.mustRun(0, "apply", "-f", f2, "--auto-approve")
	// memory is not hot-pluggable: PVE keeps it pending and pvectl says so.
	if !strings.Contains(r.stdout, "vm 100: pending until reboot: memory") {
		t.Errorf("apply does not say the memory change is pending:\n%s", r.stdout)
	}
	cfg, err := env.client.QemuConfig(ctx, "pve", 100)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Get("memory") != "4096" {
		t.Errorf("memory after apply = %q, want 4096", cfg.Get("memory"))
	}
	env.mustRun(0, "plan", "-f", f2, "--detailed-exitcode")

	// destroy removes the VM and the bridge and commits the network change.
	env.mustRun(0, "destroy", "-f", f2, "--auto-approve")
	if _, err := env.client.QemuConfig(ctx, "pve", 100); !pveNotFound(err) {
		t.Errorf("VM 100 after destroy: err = %v, want not found", err)
	}
	assertIface(t, env, "vmbr1", false)
}

func assertIface(t *testing.T, env *simEnv, iface string, want bool) {
	t.Helper()
	ifaces, changes, err := env.client.NetworkList(context.Background(), "pve")
	if err != nil {
		t.Fatalf("network list: %v", err)
	}
	found := false
	for _, i := range ifaces {
		if i.Get("iface") == iface {
			found = true
		}
	}
	if found != want {
		t.Errorf("iface %s present = %v, want %v", iface, found, want)
	}
	if changes != "" {
		t.Errorf("staged network changes left behind:\n%s", changes)
	}
}

// Invalid specs: every problem reported with file:line, exit 3, no request.
func TestE2EValidateReportsAllProblemsWithoutAPICalls(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer srv.Close()
	bad := writeSpec(t, "bad.yaml", `kind: QemuVM
name: a
dependsOn: [Pool/b]
spec:
  memroy: 2048
  cores: two
---
kind: Pool
name: b
dependsOn: [QemuVM/a]
`)
	env := &simEnv{t: t, url: srv.URL}
	for _, cmd := range [][]string{{"validate", "-f", bad}, {"plan", "-f", bad}, {"apply", "-f", bad, "--auto-approve"}} {
		r := env.mustRun(3, cmd...)
		containsAll(t, cmd[0]+": stderr", r.stderr, bad+":5", "memroy", bad+":6", "cores", "cycle", "QemuVM/a", "Pool/b")
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("invalid specs made %d API calls, want 0", n)
	}
}

func pveNotFound(err error) bool { return pve.IsNotFound(err) }

func hasPool(ps []pve.Pool, id string) bool {
	for _, p := range ps {
		if p.PoolID == id {
			return true
		}
	}
	return false
}
