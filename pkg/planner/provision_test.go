package planner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/provision"
	"github.com/pvectl/pvectl/pkg/spec"
)

// provisionResource is a QemuVM of a spec with the given provisioning
// files (name → content) beside it.
func provisionResource(t *testing.T, force bool, files ...[2]string) *spec.Resource {
	t.Helper()
	dir := t.TempDir()
	keys := &spec.GuestKeys{}
	for _, f := range files {
		p := filepath.Join(dir, f[0])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f[1]), 0o644); err != nil {
			t.Fatal(err)
		}
		keys.Provision = append(keys.Provision, f[0])
		keys.ProvisionPaths = append(keys.ProvisionPaths, p)
	}
	if force {
		keys.ForceConfigCheck = &force
	}
	return &spec.Resource{Kind: spec.KindQemuVM, Name: "vm", Params: map[string]string{"name": "vm"}, Keys: keys}
}

func hashOf(t *testing.T, r *spec.Resource, i int) string {
	t.Helper()
	p := spec.Provisioning(r)
	f, err := provision.NewFile(p.Provision[i], p.ProvisionPaths[i])
	if err != nil {
		t.Fatal(err)
	}
	return f.Hash
}

// TestPlanProvision: the plan's provisioning comes from the description
// alone: new, changed and forced files, the Provision action for a VM
// that needs nothing else, an error for one that will not run.
func TestPlanProvision(t *testing.T) {
	a, b := [2]string{"pb/a.yaml", "- hosts: all\n"}, [2]string{"b.pp", "notice('b')\n"}
	tests := []struct {
		name    string
		force   bool
		desc    func(ha, hb string) string
		action  Action
		willRun bool
		want    string // file:reason,…
		wantErr string
	}{
		{name: "all new", desc: func(_, _ string) string { return "note" }, action: NoOp, willRun: true, want: "pb/a.yaml:new,b.pp:new"},
		{name: "nothing to do", desc: func(ha, hb string) string { return "note\n[pvectl-provision: pb/a.yaml=" + ha + ",b.pp=" + hb + "]" }, action: NoOp, willRun: true, want: ""},
		{name: "one changed", desc: func(ha, _ string) string { return "[pvectl-provision: pb/a.yaml=" + ha + ",b.pp=000000000000]" }, action: NoOp, willRun: true, want: "b.pp:changed"},
		{name: "forced", force: true, desc: func(ha, hb string) string { return "[pvectl-provision: pb/a.yaml=" + ha + ",b.pp=" + hb + "]" }, action: NoOp, willRun: true, want: "pb/a.yaml:forced,b.pp:forced"},
		{name: "with an update", desc: func(ha, _ string) string { return "[pvectl-provision: pb/a.yaml=" + ha + "]" }, action: Update, willRun: true, want: "b.pp:new"},
		{name: "stopped", desc: func(_, _ string) string { return "" }, action: NoOp, willRun: false, wantErr: "will not be running"},
		{name: "stopped, nothing to run", desc: func(ha, hb string) string { return "[pvectl-provision: pb/a.yaml=" + ha + ",b.pp=" + hb + "]" }, action: NoOp, willRun: false, want: ""},
		{name: "malformed block", desc: func(_, _ string) string { return "[pvectl-provision: a.yaml=xyz]" }, action: NoOp, willRun: true, wantErr: "want 12 lowercase hex digits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := provisionResource(t, tt.force, a, b)
			c := &Change{Address: r.Address(), Action: tt.action}
			err := planProvision(r, c, tt.desc(hashOf(t, r, 0), hashOf(t, r, 1)), tt.willRun)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range c.Provision {
				got = append(got, s.File+":"+s.Reason)
			}
			if strings.Join(got, ",") != tt.want {
				t.Errorf("steps %v, want %s", got, tt.want)
			}
			wantAction := tt.action
			if tt.action == NoOp && tt.want != "" {
				wantAction = Provision
			}
			if c.Action != wantAction {
				t.Errorf("action %v, want %v", c.Action, wantAction)
			}
		})
	}
}

func TestProvisionAddressHelpers(t *testing.T) {
	for in, want := range map[string]string{"ip=10.0.0.5/24,gw=10.0.0.1": "10.0.0.5", "ip=dhcp": "", "": "", "gw=1.2.3.4,ip=127.0.0.9": "127.0.0.9"} {
		if got := staticIP(in); got != want {
			t.Errorf("staticIP(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]bool{"1": true, "0": false, "enabled=1,fstrim_cloned_disks=1": true, "enabled=0": false, "": false, "1,type=isa": true} {
		if got := agentEnabled(in); got != want {
			t.Errorf("agentEnabled(%q) = %v, want %v", in, got, want)
		}
	}
}
