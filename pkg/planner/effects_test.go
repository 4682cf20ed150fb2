package planner

import (
	"slices"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

func TestFieldEffect(t *testing.T) {
	for _, c := range []struct {
		kind, key, sub string
		want           EffectKind
		how            string         // substring of How
		live           pve.LiveChange // 0: no live rule
	}{
		{"QemuVM", "node", "", InPlace, "POST /nodes/{node}/qemu/{vmid}/migrate", 0},
		{"LxcContainer", "node", "", InPlace, "POST /nodes/{node}/lxc/{vmid}/migrate", 0},
		{"QemuVM", "vmid", "", Names, "", 0},
		{"QemuVM", "memory", "", InPlace, "PUT /nodes/{node}/qemu/{vmid}/config", pve.LiveHotplug},
		{"QemuVM", "cores", "", InPlace, "/config", pve.LivePending},
		{"QemuVM", "net0", "tag", InPlace, "/config", pve.LiveNow},
		{"QemuVM", "net0", "model", InPlace, "/config", pve.LiveHotplug},
		{"QemuVM", "scsi0", "", InPlace, "/config", pve.LiveHotplug},
		{"QemuVM", "scsi0", "size", InPlace, "/resize", 0},
		{"QemuVM", "scsi0", "import-from", CreateOnly, "", 0},
		{"QemuVM", "storage", "", CreateOnly, "", 0},
		{"QemuVM", "pool", "", InPlace, "PUT /pools", 0},
		{"QemuVM", "running", "", InPlace, "status/start", 0},
		{"QemuVM", "name", "", InPlace, "/config", pve.LiveNow},
		{"LxcContainer", "unprivileged", "", Replaces, "", 0},
		{"LxcContainer", "ostemplate", "", CreateOnly, "", 0},
		{"LxcContainer", "memory", "", InPlace, "PUT /nodes/{node}/lxc/{vmid}/config", pve.LiveNow},
		{"LxcContainer", "rootfs", "size", InPlace, "PUT /nodes/{node}/lxc/{vmid}/resize", 0},
		{"QemuVM", "ide1", "", InPlace, "/config", pve.LivePending},
		{"LxcContainer", "mp0", "", InPlace, "/config", pve.LiveNewOnly},
		{"LinuxBridge", "type", "", Fixed, "", 0},
		{"LinuxBridge", "iface", "", Names, "", 0},
		{"LinuxBridge", "node", "", Names, "", 0},
		{"LinuxBridge", "bridge_ports", "", InPlace, "PUT /nodes/{node}/network/{iface}", 0},
		{"Pool", "poolid", "", Names, "", 0},
		{"Pool", "comment", "", InPlace, "PUT /pools", 0},
		{"NodeDns", "dns1", "", InPlace, "PUT /nodes/{node}/dns", 0},
	} {
		t.Run(c.kind+"."+c.key+"."+c.sub, func(t *testing.T) {
			e, err := FieldEffect(c.kind, c.key, c.sub)
			if err != nil {
				t.Fatal(err)
			}
			if e.Kind != c.want || !strings.Contains(e.How, c.how) {
				t.Errorf("got %+v, want kind %d how ~%q", e, c.want, c.how)
			}
			var live pve.LiveChange
			if e.Live != nil {
				live = e.Live.When
			}
			if live != c.live {
				t.Errorf("live rule %v, want %v", live, c.live)
			}
		})
	}
	if _, err := FieldEffect("QemuVM", "nosuch", ""); err == nil {
		t.Error("an unknown field has an effect")
	}
}

// TestEveryFieldHasAnEffect: every key of every kind the planner knows is
// explained, so a new kind or key needs no edit for explain.
func TestEveryFieldHasAnEffect(t *testing.T) {
	for kind := range engine.Kinds {
		ks, ok := spec.SpecOf(kind)
		if !ok {
			t.Errorf("%s: no kind spec", kind)
			continue
		}
		for _, key := range ks.Keys() {
			if slices.Contains(ks.Unsupported, key) {
				continue
			}
			if _, err := FieldEffect(kind, key, ""); err != nil {
				t.Errorf("%s.%s: %v", kind, key, err)
			}
		}
	}
}

// TestGuestCreateOnlyFollowsSchema: what a guest leaves out of the
// comparison is what only PVE's create call takes (plus the path
// variables and the delete flag force), as the schema facts say.
func TestGuestCreateOnlyFollowsSchema(t *testing.T) {
	for kind, k := range engine.Kinds {
		g, ok := guestOf(k)
		if !ok {
			continue
		}
		ks, _ := spec.SpecOf(kind)
		want := map[string]bool{"node": true, "vmid": true, "force": true}
		for _, p := range ks.Params {
			if p.CreateOnly {
				want[p.Name] = true
				if !g.notInConfig[p.Name] {
					t.Errorf("%s: %s is create-only in the schema, but compared", kind, p.Name)
				}
			}
		}
		for key := range g.notInConfig {
			if !want[key] {
				t.Errorf("%s: %s is left out of the comparison, but the update call takes it", kind, key)
			}
		}
	}
}

func guestOf(k engine.KindOps) (guest, bool) {
	switch x := k.(type) {
	case qemuKind:
		return x.guest, true
	case lxcKind:
		return x.guest, true
	}
	return guest{}, false
}
