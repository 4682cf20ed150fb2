package planner

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/marks"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

func TestRecipeBlock(t *testing.T) {
	tests := []struct{ name, desc, want string }{
		{"empty", "", "[pvectl-template: recipe=0123456789ab]"},
		{"appended after the note", "my note\n  indented ", "my note\n  indented \n[pvectl-template: recipe=0123456789ab]"},
		{"replaced where it stands", "a\n[pvectl-template: recipe=ffffffffffff]\nb [pvectl-provision: x.yaml=aaaaaaaaaaaa]", "a\n[pvectl-template: recipe=0123456789ab]\nb [pvectl-provision: x.yaml=aaaaaaaaaaaa]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := withRecipe(tt.desc, "0123456789ab")
			if got != tt.want {
				t.Errorf("got %q want %q", got, tt.want)
			}
			if liveRecipe(got) != "0123456789ab" {
				t.Errorf("liveRecipe(%q) = %q", got, liveRecipe(got))
			}
		})
	}
}

const templateYAML = `kind: Template
name: golden
spec:
  baseImage: 24.04-cloud
  cores: 4
  memory: 2048
---
kind: QemuVM
name: app-1
spec:
  fromTemplate: golden
  memory: 1024
---
kind: QemuVM
name: app-2
spec:
  fromTemplate: golden
`

// The template is baked once (clone, start, shut down, recipe, convert),
// both VMs are cloned from it, nothing changes on a second plan, a user's
// note survives, and a changed recipe rebuilds the template.
func TestSimTemplateLifecycle(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	p := planFor(t, sim, loadSpec(t, templateYAML), engine.Options{})
	tc := p.Change("Template/golden")
	if tc.Action != engine.Create || !strings.Contains(strings.Join(tc.Reasons, "; "), "baked from template 9000 (ubuntu-24.04-cloud)") {
		t.Fatalf("template: %s %v, want a create baked from 9000", tc.Action, tc.Reasons)
	}
	if c := p.Change("QemuVM/app-1"); !strings.Contains(strings.Join(c.Reasons, "; "), "full clone of Template/golden, once it is baked") {
		t.Errorf("app-1 reasons %v", c.Reasons)
	}
	_, h := applyHooked(t, sim, p)
	msgs := strings.Join(h.messages, "\n")
	for _, want := range []string{"starting vm", "shutting down vm", "converting vm"} {
		if !strings.Contains(msgs, want) {
			t.Errorf("messages lack %q:\n%s", want, msgs)
		}
	}
	tid := stateOf(tc).Created
	cfg, err := sim.cl.QemuConfig(ctx, "pve", tid)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Get("template") != "1" || cfg.Get("cores") != "4" || liveRecipe(cfg.Get("description")) == "" || !strings.Contains(cfg.Get("scsi0"), "base-") {
		t.Fatalf("template config %v: want a template with base disks, cores 4 and a recipe block", cfg)
	}
	for _, vm := range []string{"QemuVM/app-1", "QemuVM/app-2"} {
		st := stateOf(p.Change(vm))
		vc, err := sim.cl.QemuConfig(ctx, "pve", st.Created)
		if err != nil {
			t.Fatal(err)
		}
		if st.Clone == nil || st.Clone.VMID != tid {
			t.Errorf("%s cloned from %v, want template %d", vm, st.Clone, tid)
		}
		// Its own owner block is the only pvectl block (owner.go).
		if vc.Get("cores") != "4" || strings.Contains(vc.Get("description"), "[pvectl-template") ||
			marks.UserDescription(vc.Get("description")) != "" {
			t.Errorf("%s config %v: want the template's cores and no inherited pvectl block", vm, vc)
		}
		if stack, id, ok := marks.ParseOwnerMark(vc.Get("description")); !ok || stack != engine.DefaultStack || id != st.Created {
			t.Errorf("%s: owner mark %q %d %v, want %s and its vmid %d", vm, stack, id, ok, engine.DefaultStack, st.Created)
		}
	}

	// A user's note on the template survives: no change, no write.
	note := "golden image — ask ops\n  before touching  "
	if err := sim.cl.UpdateGuest(ctx, pve.QEMU, "pve", tid, url.Values{"description": {note + "\n" + cfg.Get("description")}}); err != nil {
		t.Fatal(err)
	}
	p = planFor(t, sim, loadSpec(t, templateYAML), engine.Options{})
	for _, c := range p.Changes {
		if c.Action != engine.NoOp {
			t.Errorf("second plan: %s %s %v, want noop", c.Address, c.Action, c.Reasons)
		}
	}

	// A changed recipe rebuilds it, keeping its vmid and the user's note.
	changed := strings.Replace(templateYAML, "cores: 4", "cores: 2", 1)
	p = planFor(t, sim, loadSpec(t, changed), engine.Options{})
	tc = p.Change("Template/golden")
	if tc.Action != engine.Replace || tc.CreateFirst {
		t.Fatalf("changed recipe: %s createFirst=%v %v, want a replace that removes first", tc.Action, tc.CreateFirst, tc.Reasons)
	}
	if c := p.Change("QemuVM/app-1"); c.Action != engine.NoOp {
		t.Errorf("app-1: %s %v: a VM keeps what it was cloned from", c.Action, c.Reasons)
	}
	applyPlan(t, sim, p)
	cfg, err = sim.cl.QemuConfig(ctx, "pve", tid)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Get("template") != "1" || cfg.Get("cores") != "2" || !strings.HasPrefix(cfg.Get("description"), note+"\n[pvectl-template: recipe=") {
		t.Fatalf("rebuilt template %d: %v, want cores 2 and the note first", tid, cfg)
	}
	if p := planFor(t, sim, loadSpec(t, changed), engine.Options{}); p.Change("Template/golden").Action != engine.NoOp {
		t.Errorf("after the rebuild: %v", p.Change("Template/golden").Reasons)
	}
}

// A template that linked clones hold (on a storage whose clones name
// their base) is neither rebuilt nor removed: the plan says which VMs.
func TestSimTemplateLinkedClonesRefuse(t *testing.T) {
	sim := newSim(t)
	yaml := `kind: Storage
name: tpl
spec: {type: dir, path: /srv/tpl, content: images}
---
kind: Template
name: golden
spec:
  baseImage: "9000"
  storage: tpl
---
kind: QemuVM
name: linked-1
spec:
  fromTemplate: golden
  full: false
`
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, yaml), engine.Options{}))
	changed := strings.Replace(yaml, "storage: tpl\n", "storage: tpl\n  cores: 3\n", 1)
	_, err := tryPlan(t, sim, loadSpec(t, changed), engine.Options{})
	if err == nil || !strings.Contains(err.Error(), "Template/golden: cannot rebuild template") || !strings.Contains(err.Error(), "(linked-1)") {
		t.Fatalf("got %v, want the rebuild refused naming linked-1", err)
	}
	// Destroying both is fine: the clone goes first.
	p := planFor(t, sim, loadSpec(t, yaml), engine.Options{Destroy: true})
	if c := p.Change("Template/golden"); c.Action != engine.Delete {
		t.Errorf("destroy: %s %v", c.Action, c.Reasons)
	}
}

func TestStripInherited(t *testing.T) {
	tests := []struct {
		name, live string
		upd, want  map[string]string
	}{
		{"no block", "note", map[string]string{}, map[string]string{}},
		{"only the recipe", "[pvectl-template: recipe=0123456789ab]", map[string]string{"delete": "tags"},
			map[string]string{"delete": "tags,description"}},
		{"note and provision kept", "note\n[pvectl-template: recipe=0123456789ab]\n[pvectl-provision: a.yaml=aaaaaaaaaaaa]", map[string]string{},
			map[string]string{"description": "note\n[pvectl-provision: a.yaml=aaaaaaaaaaaa]"}},
		{"the spec's text with the live blocks", "x\n[pvectl-template: recipe=0123456789ab]", map[string]string{"description": "mine\n[pvectl-template: recipe=0123456789ab]"},
			map[string]string{"description": "mine"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stripInherited(tt.upd, pve.ConfigOf(map[string]string{"description": tt.live}))
			if fmt.Sprint(tt.upd) != fmt.Sprint(tt.want) {
				t.Errorf("got %v want %v", tt.upd, tt.want)
			}
		})
	}
}

// A VM of the template's name that is no template (a bake that failed
// after the clone) is rebuilt.
func TestSimTemplateUnfinishedBake(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	if err := sim.cl.CloneGuest(ctx, pve.QEMU, "pve", 9000, url.Values{"newid": {"150"}, "name": {"golden"}, "full": {"1"}}); err != nil {
		t.Fatal(err)
	}
	yaml := "kind: Template\nname: golden\nspec:\n  baseImage: \"9000\"\n"
	p := planFor(t, sim, loadSpec(t, yaml), engine.Options{})
	c := p.Change("Template/golden")
	if c.Action != engine.Replace || stateOf(c).VMID != 150 || !strings.Contains(strings.Join(c.Reasons, "; "), "is not a template: a bake that did not finish") {
		t.Fatalf("got %s vmid %d %v, want a rebuild of VM 150", c.Action, stateOf(c).VMID, c.Reasons)
	}
	applyPlan(t, sim, p)
	cfg, err := sim.cl.QemuConfig(ctx, "pve", 150)
	if err != nil || cfg.Get("template") != "1" || liveRecipe(cfg.Get("description")) == "" {
		t.Fatalf("VM 150 after the rebuild: %v, %v", cfg, err)
	}
}

// A Template is kept or rebuilt, never updated: what explain says a
// changed key does (FieldEffect) is what the plan of that change does.
func TestSimTemplateFieldEffects(t *testing.T) {
	const base = `kind: Template
name: golden
spec:
  baseImage: "9000"
  node: pve
  cores: 4
  sshUser: ubuntu
`
	sim := newSim(t, "pve", "pve2")
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, base), engine.Options{}))
	if why, ok := Rebuilt("Template"); !ok || !strings.Contains(why, "never updated in place") {
		t.Errorf("Rebuilt(Template) = %q, %v", why, ok)
	}
	if _, ok := Rebuilt("QemuVM"); ok {
		t.Error("a QemuVM is updated in place, Rebuilt says it is not")
	}
	for _, tt := range []struct {
		key, from, to string
		effect        EffectKind
		action        engine.Action
	}{
		{"cores", "cores: 4", "cores: 2", Replaces, engine.Replace},
		{"memory", "cores: 4", "cores: 4\n  memory: 1024", Replaces, engine.Replace},
		{"ip", "cores: 4", "cores: 4\n  ip: 10.0.5.50/24", Replaces, engine.Replace},
		{"node", "node: pve", "node: pve2", Replaces, engine.Replace},
		{"baseImage", `baseImage: "9000"`, "baseImage: ubuntu-24.04-cloud", Replaces, engine.Replace}, // as written
		{"vmid", `baseImage: "9000"`, `baseImage: "9000"` + "\n  vmid: 9100", Names, engine.Create},
		{"name", "name: golden", "name: golden2", Names, engine.Create},
		{"sshUser", "sshUser: ubuntu", "sshUser: admin", CreateOnly, engine.NoOp},
		{"provisionTimeout", "cores: 4", "cores: 4\n  provisionTimeout: 5m", CreateOnly, engine.NoOp},
		{"description", "cores: 4", "cores: 4\n  description: hello", CreateOnly, engine.NoOp},
	} {
		t.Run(tt.key, func(t *testing.T) {
			key := tt.key
			e, err := FieldEffect("Template", key, "")
			if err != nil {
				t.Fatal(err)
			}
			if e.Kind != tt.effect || e.How != "" || e.Live != nil {
				t.Errorf("FieldEffect(Template, %s) = %+v, want kind %d and no in-place call", key, e, tt.effect)
			}
			changed := strings.Replace(base, tt.from, tt.to, 1)
			if changed == base {
				t.Fatalf("%q not in the spec", tt.from)
			}
			p := planFor(t, sim, loadSpec(t, changed), engine.Options{})
			var c *engine.Change
			for _, x := range p.Changes {
				if x.Resource != nil && x.Resource.Kind == "Template" {
					c = x
				}
			}
			if c == nil || c.Action != tt.action {
				t.Fatalf("plan of a changed %s: %v, want %s", key, c, tt.action)
			}
			for _, x := range p.Changes {
				if x.Action == engine.Update {
					t.Errorf("%s: an update of a template is planned: %v", x.Address, x.Reasons)
				}
			}
		})
	}
	// With vmid set, a new name is refused: the vmid holds the template
	// of the old one.
	pinned := strings.Replace(base, "cores: 4", "cores: 4\n  vmid: 9200", 1)
	pinned = strings.Replace(pinned, "name: golden", "name: pinned", 1)
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, pinned), engine.Options{}))
	set := loadSpec(t, strings.Replace(pinned, "name: pinned", "name: pinned2", 1))
	obs, err := engine.Observe(context.Background(), sim, set)
	if err == nil {
		_, err = engine.Build(context.Background(), set, obs, engine.Options{})
	}
	if err == nil || !strings.Contains(err.Error(), "vmid 9200 is held by VM \"pinned\"") {
		t.Errorf("a new name with vmid set: %v, want it refused", err)
	}
	// Every key of the kind: never in place.
	ks, _ := spec.SpecOf("Template")
	for _, key := range ks.Keys() {
		if e, err := FieldEffect("Template", key, ""); err != nil || e.Kind == InPlace {
			t.Errorf("Template.%s: %+v, %v: a template is never updated in place", key, e, err)
		}
	}
	for _, sub := range []string{"size", "file", "cache"} {
		if e, _ := FieldEffect("Template", "scsi0", sub); e.Kind != Replaces {
			t.Errorf("Template.scsi0.%s: %+v, want a rebuild", sub, e)
		}
	}
}
