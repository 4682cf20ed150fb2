package planner

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/provision"
	"github.com/pvectl/pvectl/pkg/provision/provisiontest"
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
	return &spec.Resource{Kind: spec.KindQemuVM, Name: "vm", Params: spec.ParamsOf(map[string]string{"name": "vm"}), Keys: keys}
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
		action  engine.Action
		willRun bool
		want    string // file:reason,…
		wantErr string
	}{
		{name: "all new", desc: func(_, _ string) string { return "note" }, action: engine.NoOp, willRun: true, want: "pb/a.yaml:new,b.pp:new"},
		{name: "nothing to do", desc: func(ha, hb string) string { return "note\n[pvectl-provision: pb/a.yaml=" + ha + ",b.pp=" + hb + "]" }, action: engine.NoOp, willRun: true, want: ""},
		{name: "one changed", desc: func(ha, _ string) string { return "[pvectl-provision: pb/a.yaml=" + ha + ",b.pp=000000000000]" }, action: engine.NoOp, willRun: true, want: "b.pp:changed"},
		{name: "forced", force: true, desc: func(ha, hb string) string { return "[pvectl-provision: pb/a.yaml=" + ha + ",b.pp=" + hb + "]" }, action: engine.NoOp, willRun: true, want: "pb/a.yaml:forced,b.pp:forced"},
		{name: "with an update", desc: func(ha, _ string) string { return "[pvectl-provision: pb/a.yaml=" + ha + "]" }, action: engine.Update, willRun: true, want: "b.pp:new"},
		{name: "stopped", desc: func(_, _ string) string { return "" }, action: engine.NoOp, willRun: false, wantErr: "will not be running"},
		{name: "stopped, nothing to run", desc: func(ha, hb string) string { return "[pvectl-provision: pb/a.yaml=" + ha + ",b.pp=" + hb + "]" }, action: engine.NoOp, willRun: false, want: ""},
		{name: "malformed block", desc: func(_, _ string) string { return "[pvectl-provision: a.yaml=xyz]" }, action: engine.NoOp, willRun: true, wantErr: "want 12 lowercase hex digits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := provisionResource(t, tt.force, a, b)
			c := &engine.Change{Address: r.Address(), Action: tt.action}
			err := planProvision(r, c, tt.desc(hashOf(t, r, 0), hashOf(t, r, 1)), tt.willRun)
			if !succeeded(t, err, tt.wantErr) {
				return
			}
			var got []string
			for _, s := range c.Provision {
				got = append(got, s.File+":"+s.Reason)
			}
			if strings.Join(got, ",") != tt.want {
				t.Errorf("steps %v, want %s", got, tt.want)
			}
			wantAction := tt.action
			if tt.action == engine.NoOp && tt.want != "" {
				wantAction = engine.Provision
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

// TestSimPlanProvision: against the simulator, the plan's provisioning
// comes from descriptions alone: a clone from the template's block (what
// the template ran counts), an existing VM from its own; a stopped VM
// that is not to run is an error; destroy never provisions.
func TestSimPlanProvision(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	dir := t.TempDir()
	for name, text := range map[string]string{"a.yaml": "- hosts: all\n", "b.yaml": "- hosts: all\n  tasks: []\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fa, err := provision.NewFile("a.yaml", filepath.Join(dir, "a.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The seeded template 9000 ran a.yaml.
	if err := sim.cl.UpdateQemu(ctx, "pve", 9000, url.Values{"description": {"golden\n[pvectl-provision: a.yaml=" + fa.Hash + "]"}}); err != nil {
		t.Fatal(err)
	}
	specPath := filepath.Join(dir, "spec.yaml")
	write := func(yaml string) *spec.Set {
		if err := os.WriteFile(specPath, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		set, err := spec.Load([]string{specPath}, spec.LoadOptions{Getenv: testGetenv})
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	set := write("kind: QemuVM\nname: web\nspec:\n  image: \"9000\"\n  ip: 127.0.0.9\n  description: web's note\n  provision: [a.yaml, b.yaml]\n")
	p := planFor(t, sim, set, engine.Options{})
	c := p.Change("QemuVM/web")
	if c.Action != engine.Create || len(c.Provision) != 1 || c.Provision[0].File != "b.yaml" || c.Provision[0].Reason != "new" {
		t.Fatalf("clone of a template that ran a.yaml: %v %+v", c.Action, c.Provision)
	}

	// A stopped VM that is not to run cannot be provisioned.
	if err := sim.cl.CreateQemu(ctx, "pve", url.Values{"vmid": {"120"}, "name": {"stopped"}, "memory": {"512"}}); err != nil {
		t.Fatal(err)
	}
	set = write("kind: QemuVM\nname: stopped\nspec:\n  memory: 512\n  provision: [a.yaml]\n")
	if _, err := tryPlan(t, sim, set, engine.Options{}); err == nil || !strings.Contains(err.Error(), "will not be running: set running: true") {
		t.Errorf("stopped VM: got %v, want the plan to refuse", err)
	}
	// Destroy plans no provisioning.
	p = planFor(t, sim, set, engine.Options{Destroy: true})
	if c := p.Change("QemuVM/stopped"); c.Action != engine.Delete || len(c.Provision) != 0 {
		t.Errorf("destroy: %v %+v", c.Action, c.Provision)
	}
}

// A bake's provisioning over a real sshd on loopback reports its phase to
// the hooks that take it: reaching the guest, each file, and its end (the
// CLI's still-running lines say "Still provisioning… [20s elapsed,
// app.yaml]" rather than "Still creating…").
func TestSimProvisionPhases(t *testing.T) {
	provisiontest.Require(t, "sshd", "ssh", "ansible-playbook")
	sshd := provisiontest.StartSSHD(t)
	t.Setenv(provision.EnvPrivateKey, sshd.KeyPath)
	dir, out := t.TempDir(), t.TempDir()
	play := fmt.Sprintf("- hosts: all\n  gather_facts: false\n  tasks:\n    - name: mark\n      ansible.builtin.shell: echo ran >> %s\n", filepath.Join(out, "app.log"))
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(play), 0o644); err != nil {
		t.Fatal(err)
	}
	set := loadSpecIn(t, dir, fmt.Sprintf(`kind: Template
name: golden
spec:
  baseImage: "9000"
  ip: %s
  sshUser: %s
  sshPort: %d
  provision: [app.yaml]
`, sshd.Host, sshd.User, sshd.Port))
	sim := newSim(t)
	_, h := applyHooked(t, sim, planFor(t, sim, set, engine.Options{}))
	want := []string{"Template/golden: provisioning/reaching the guest", "Template/golden: provisioning/app.yaml", "Template/golden: -"}
	if strings.Join(h.phases, "\n") != strings.Join(want, "\n") {
		t.Errorf("phases:\n%s\nwant:\n%s\nmessages:\n%s", strings.Join(h.phases, "\n"), strings.Join(want, "\n"), strings.Join(h.messages, "\n"))
	}
	if b, _ := os.ReadFile(filepath.Join(out, "app.log")); string(b) != "ran\n" {
		t.Errorf("app.yaml ran %q, want once", b)
	}
}
