package spec

import (
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// The parameters a spec must write follow from the schema's required
// create parameters, less what pvectl supplies (node, vmid, identity,
// fixed values, a node's live search domain).
func TestRequiredParamsFromSchema(t *testing.T) {
	want := map[string][]string{
		KindLxcContainer:    {"ostemplate"},
		KindDownloadedImage: {"content", "storage", "url"},
		KindConfigDriveISO:  {"storage"},
		KindAPIToken:        {"userid"},
		KindACL:             {"path", "roles"},
		KindStorage:         {"type"},
		KindRealm:           {"type"},
		KindRealmSyncJob:    {"schedule"},
		KindMetricServer:    {"port", "server", "type"},

		KindHARule:         {"type"},
		KindReplicationJob: {"target"},

		KindSdnZone:       {"type"},
		KindSdnVnet:       {"zone"},
		KindSdnSubnet:     {"subnet", "vnet"},
		KindSdnController: {"type"},
	}
	table := schema.Default()
	for _, name := range SupportedKinds() {
		k := kindOf(name)
		if k.Create == nil {
			continue
		}
		m, ok := table.Lookup(k.Create.Method, k.Create.Path)
		if !ok {
			t.Fatalf("%s: no schema for %s %s", name, k.Create.Method, k.Create.Path)
		}
		if diff := cmp.Diff(want[name], requiredParams(k, m)); diff != "" {
			t.Errorf("%s: required params got %v want %v (-want +got):\n%s", name, requiredParams(k, m), want[name], diff)
		}
	}
}

func TestRequiredCreateParams(t *testing.T) {
	const tmpl = "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"container without ostemplate", "kind: LxcContainer\nname: ct\nspec:\n  memory: 512\n",
			[]string{"a.yaml:1: LxcContainer/ct: spec.ostemplate is required: the template the container is made from, e.g. " + tmpl + " (PVE does not record it: write it for a container that exists too)"}},
		{"container with ostemplate", "kind: LxcContainer\nname: ct\nspec:\n  ostemplate: " + tmpl + "\n", nil},
		{"ostemplate from Defaults", "kind: Defaults\nname: d\nspec:\n  LxcContainer: {ostemplate: " + tmpl + "}\n---\nkind: LxcContainer\nname: ct\n", nil},
		{"an absent container is not created", "kind: LxcContainer\nname: ct\nstate: absent\n", nil},
		{"a read-only container is not created", "kind: LxcContainer\nname: ct\nmanaged: false\n", nil},
		{"a null ostemplate", "kind: LxcContainer\nname: ct\nspec:\n  ostemplate: null\n",
			[]string{"a.yaml:4: spec.ostemplate cannot be null: LxcContainer needs it"}},
		{"an absent download is found by storage and content", "kind: DownloadedImage\nname: x.iso\nstate: absent\nspec: {storage: local}\n",
			[]string{"a.yaml:1: DownloadedImage/x.iso: spec.content is required: iso, vztmpl or import"}},
		{"a VM needs nothing pvectl supplies", "kind: QemuVM\nname: vm\n", nil},
		{"node DNS keeps the live search domain", "kind: NodeDns\nname: pve\nspec: {dns1: 127.0.0.53}\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantDiags(t, tt.doc, tt.want)
		})
	}
}

// A parameter the schema makes required is required in specs, with no
// list to update: here the facts say a pool's comment is required.
func TestRequiredFollowsTheSchema(t *testing.T) {
	base := schema.Default()
	table := &schema.Table{Methods: maps.Clone(base.Methods)}
	m := *table.Methods["POST /pools"]
	m.Params = maps.Clone(m.Params)
	comment := *m.Params["comment"]
	comment.Optional = false
	m.Params["comment"] = &comment
	table.Methods["POST /pools"] = &m
	dir := writeFiles(t, map[string]string{"a.yaml": "kind: Pool\nname: p\n"})
	_, err := Load([]string{dir + "/a.yaml"}, LoadOptions{Getenv: env(), Schema: table})
	want := dir + "/a.yaml:1: Pool/p: spec.comment is required: PVE refuses to create a pool without it (POST /pools)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
