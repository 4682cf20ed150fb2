package pvesim_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// What pve-cluster src/PVE/DataCenterConfig.pm write_datacenter_config
// changes and parse_datacenter_config reads back, through GET
// /cluster/options.
func TestDatacenterOptionsWriterMappings(t *testing.T) {
	get := func(e *env, keys ...string) map[string]any {
		t.Helper()
		got := e.object("/cluster/options")
		out := map[string]any{}
		for _, k := range keys {
			if v, ok := got[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	t.Run("description keeps its empty lines but the last", func(t *testing.T) {
		e := startEnv(t, simtest.Options{Conformance: true})
		e.ok(nil, "PUT", "/cluster/options", "description", "\nfirst\n\nsecond\n\n")
		if diff := cmp.Diff(map[string]any{"description": "\nfirst\n\nsecond\n"}, get(e, "description")); diff != "" {
			t.Errorf("(-want +got)\n%s", diff)
		}
	})
	t.Run("console applet is written as html5", func(t *testing.T) {
		e := startEnv(t, simtest.Options{Conformance: true})
		e.ok(nil, "PUT", "/cluster/options", "console", "applet")
		if diff := cmp.Diff(map[string]any{"console": "html5"}, get(e, "console")); diff != "" {
			t.Errorf("(-want +got)\n%s", diff)
		}
	})
	t.Run("migration_unsecure becomes migration's type", func(t *testing.T) {
		e := startEnv(t, simtest.Options{Conformance: true})
		e.ok(nil, "PUT", "/cluster/options", "migration_unsecure", "1")
		want := map[string]any{"migration": map[string]any{"type": "insecure"}}
		if diff := cmp.Diff(want, get(e, "migration", "migration_unsecure")); diff != "" {
			t.Errorf("(-want +got)\n%s", diff)
		}
	})
	t.Run("migration_unsecure beside migration is kept", func(t *testing.T) {
		e := startEnv(t, simtest.Options{Conformance: true})
		e.ok(nil, "PUT", "/cluster/options", "migration", "type=secure,network=10.0.0.0/24", "migration_unsecure", "1")
		want := map[string]any{"migration": map[string]any{"type": "secure", "network": "10.0.0.0/24"}, "migration_unsecure": 1.0}
		if diff := cmp.Diff(want, get(e, "migration", "migration_unsecure")); diff != "" {
			t.Errorf("(-want +got)\n%s", diff)
		}
	})
	t.Run("registered-tags are sorted once the file is rewritten", func(t *testing.T) {
		e := startEnv(t, simtest.Options{Conformance: true})
		e.ok(nil, "PUT", "/cluster/options", "registered-tags", "zeta;alpha")
		if diff := cmp.Diff(map[string]any{"registered-tags": []any{"zeta", "alpha"}}, get(e, "registered-tags")); diff != "" {
			t.Errorf("as sent (-want +got)\n%s", diff)
		}
		e.ok(nil, "PUT", "/cluster/options", "keyboard", "de")
		if diff := cmp.Diff(map[string]any{"registered-tags": []any{"alpha", "zeta"}}, get(e, "registered-tags")); diff != "" {
			t.Errorf("after another PUT (-want +got)\n%s", diff)
		}
	})
}

// allowed-tags is pve-guest-common GuestHelpers.pm get_allowed_tags: for
// root (Sys.Modify on /) the guests' tags, the user-allow-list and the
// registered tags.
func TestDatacenterOptionsAllowedTags(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "memory", "512", "tags", "web;prod")
	e.ok(nil, "PUT", "/cluster/options", "registered-tags", "ops", "user-tag-access", "user-allow=none,user-allow-list=lab")
	got := e.object("/cluster/options")
	if diff := cmp.Diff([]any{"lab", "ops", "prod", "web"}, got["allowed-tags"]); diff != "" {
		t.Errorf("allowed-tags (-want +got)\n%s", diff)
	}
}

// The user-allow-list, like registered-tags, is sorted when set_options
// rewrites the file (DataCenterConfig.pm write_datacenter_config), and an
// empty crs is not written.
func TestDatacenterOptionsRewrite(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "PUT", "/cluster/options", "user-tag-access", "user-allow=list,user-allow-list=zeta;alpha")
	e.ok(nil, "PUT", "/cluster/options", "keyboard", "de")
	got := e.object("/cluster/options")
	uta, _ := got["user-tag-access"].(map[string]any)
	if diff := cmp.Diff([]any{"alpha", "zeta"}, uta["user-allow-list"]); diff != "" {
		t.Errorf("user-allow-list (-want +got)\n%s", diff)
	}
	if r := e.call("PUT", "/cluster/options", "crs", ""); r.Status == 200 {
		if got := e.object("/cluster/options"); got["crs"] != nil {
			t.Errorf("after crs=\"\": got crs %v, want none", got["crs"])
		}
	}
}
