package spec

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestKindSpecsCoverEveryKind: every supported kind is described, every
// kind that creates through PVE has an update call, and every own key has
// a description, so that schema and explain cover new rows unasked.
func TestKindSpecsCoverEveryKind(t *testing.T) {
	specs := KindSpecs()
	if got, want := len(specs), len(SupportedKinds()); got != want {
		t.Fatalf("got %d kind specs, want %d", got, want)
	}
	for _, k := range specs {
		t.Run(k.Kind, func(t *testing.T) {
			if k.Create != nil && k.Update == nil && !k.Immutable {
				t.Errorf("no update call found for %s: set the row's Update", k.Create)
			}
			if k.Create != nil && len(k.Params) == 0 {
				t.Errorf("no parameters from %s", k.Create)
			}
			for _, o := range k.Own {
				if strings.TrimSpace(o.Doc) == "" {
					t.Errorf("own key %s has no doc tag in its Keys struct", o.Name)
				}
			}
			if !slices.IsSortedFunc(k.Params, func(a, b *ParamSpec) int { return strings.Compare(a.Name, b.Name) }) {
				t.Error("params are not sorted")
			}
		})
	}
}

func TestKindSpecFacts(t *testing.T) {
	qemu, ok := SpecOf("QemuVM")
	if !ok {
		t.Fatal("no QemuVM")
	}
	if got, want := qemu.Update.String(), "PUT /nodes/{node}/qemu/{vmid}/config"; got != want {
		t.Errorf("update call: got %s, want %s", got, want)
	}
	var createOnly []string
	for _, p := range qemu.Params {
		if p.CreateOnly {
			createOnly = append(createOnly, p.Name)
		}
	}
	want := []string{"archive", "bwlimit", "ha-managed", "import-working-storage", "live-restore", "pool", "start", "storage", "unique"}
	if d := cmp.Diff(want, createOnly); d != "" {
		t.Errorf("create-only parameters (-want +got):\n%s", d)
	}
	for key, want := range map[string]string{"net0": "net[n]", "net31": "net[n]", "net32": "", "net01": "", "memory": "memory", "nosuch": ""} {
		p, ok := qemu.Param(key)
		got := ""
		if ok {
			got = p.Name
		}
		if got != want {
			t.Errorf("Param(%q) = %q, want %q", key, got, want)
		}
	}
	vmid, _ := qemu.Param("vmid")
	node, _ := qemu.Param("node")
	name, _ := qemu.Param("name")
	tags, _ := qemu.Param("tags")
	net, _ := qemu.Param("net0")
	switch {
	case !vmid.Identifies || !name.Identifies || node.Identifies || !node.InPath:
		t.Errorf("identities: vmid %v, name %v, node %v (in path %v)", vmid.Identifies, name.Identifies, node.Identifies, node.InPath)
	case tags.ListSeparator != ";" || !net.PropertyString || net.SubKeys()["tag"] == nil:
		t.Errorf("tags separator %q, net0 property string %v", tags.ListSeparator, net.PropertyString)
	case name.Removable || !tags.Removable:
		t.Errorf("removable: name %v, tags %v", name.Removable, tags.Removable)
	}

	bridge, _ := SpecOf("LinuxBridge")
	iface, _ := bridge.Param("iface")
	typ, _ := bridge.Param("type")
	if !iface.Identifies || typ.Fixed != "bridge" || bridge.Update.String() != "PUT /nodes/{node}/network/{iface}" {
		t.Errorf("bridge: iface identifies %v, type fixed %q, update %s", iface.Identifies, typ.Fixed, bridge.Update)
	}
	apply, _ := SpecOf("NetworkApply")
	if len(apply.Params) != 1 || apply.Params[0].Name != "node" {
		t.Errorf("NetworkApply params: got %d, want only node", len(apply.Params))
	}
	conn, _ := SpecOf("Connection")
	url, ok := conn.OwnKey("url")
	secret, _ := conn.OwnKey("tokenSecret")
	nodes, _ := conn.OwnKey("nodes")
	if !ok || !url.Required || !secret.Secret || nodes.Type != OwnList || conn.Resource {
		t.Errorf("Connection keys: url %+v, tokenSecret %+v, nodes %+v", url, secret, nodes)
	}
	if d, _ := SpecOf("Defaults"); !d.Defaults || d.Resource {
		t.Errorf("Defaults: %+v", d)
	}
}

func TestDocumentKeys(t *testing.T) {
	var names []string
	for _, k := range DocumentKeys() {
		names = append(names, k.Name)
		if k.Doc == "" {
			t.Errorf("%s has no doc", k.Name)
		}
	}
	if d := cmp.Diff(topLevelKeys, names); d != "" {
		t.Errorf("document keys (-want +got):\n%s", d)
	}
}
