package planner

import (
	"net/url"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/pvectl/pvectl/pkg/planner/marks"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

func TestOwnerMark(t *testing.T) {
	tests := []struct {
		name, desc, want string
	}{
		{"empty", "", "[pvectl-owner: stack=prod,vmid=101]"},
		{"user text kept byte for byte", "web\n\nserver  \n", "web\n\nserver  \n[pvectl-owner: stack=prod,vmid=101]"},
		{"after provisioning's block", "web\n[pvectl-provision: a.yaml=0123456789ab]", "web\n[pvectl-provision: a.yaml=0123456789ab]\n[pvectl-owner: stack=prod,vmid=101]"},
		{"an inherited mark is replaced", "web\n[pvectl-owner: stack=dev,vmid=9000]", "web\n[pvectl-owner: stack=prod,vmid=101]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := marks.WithOwnerMark(tt.desc, "prod", 101)
			if got != tt.want {
				t.Errorf("marks.WithOwnerMark(%q) = %q, want %q", tt.desc, got, tt.want)
			}
			stack, vmid, ok := marks.ParseOwnerMark(got)
			if !ok || stack != "prod" || vmid != 101 {
				t.Errorf("marks.ParseOwnerMark(%q) = %q, %d, %v; want prod, 101, true", got, stack, vmid, ok)
			}
			if user := marks.UserDescription(got); user != marks.UserDescription(tt.desc) && tt.name != "an inherited mark is replaced" {
				t.Errorf("the user's text changed: got %q want %q", user, marks.UserDescription(tt.desc))
			}
		})
	}
	if _, _, ok := marks.ParseOwnerMark("[pvectl-owner: stack=a b,vmid=1]"); ok {
		t.Error("ParseOwnerMark accepts a stack with a space")
	}
}

func TestOwnerTags(t *testing.T) {
	tests := []struct{ tags, with, without string }{
		{"", "pvectl", ""},
		{"web", "web;pvectl", "web"},
		{"pvectl;web", "pvectl;web", "web"},
		{"a,b pvectl", "a,b pvectl", "a;b"},
		{"pvectl-x", "pvectl-x;pvectl", "pvectl-x"},
	}
	for _, tt := range tests {
		if got := marks.WithOwnerTag(tt.tags); got != tt.with {
			t.Errorf("marks.WithOwnerTag(%q) = %q, want %q", tt.tags, got, tt.with)
		}
		if got := marks.WithoutOwnerTag(tt.tags); got != tt.without {
			t.Errorf("marks.WithoutOwnerTag(%q) = %q, want %q", tt.tags, got, tt.without)
		}
	}
}

// TestOwnerTagNotDrift: the owner tag PVE keeps beside the spec's tags is
// no drift, and an update of the tags keeps it.
func TestOwnerTagNotDrift(t *testing.T) {
	live := pve.ConfigOf(map[string]string{"tags": "pvectl;web", "description": "x\n[pvectl-owner: stack=default,vmid=100]"})
	wantMarkKept(t, live, map[string]string{"tags": "web", "description": "x"}, "tags", "web", "db", "db;pvectl")
	cmp := qemuComparer(t)
	// A spec that sets the tag itself compares it as written.
	if d := cmp.DiffParams(map[string]string{"tags": "pvectl;web"}, nil, live, nil); len(d) != 0 {
		t.Errorf("the spec's own pvectl tag: got diff %v want none", d)
	}
	if got := importedConfig(live); got.Get("tags") != "web" || got.Get("description") != "x" {
		t.Errorf("import writes tags %q, description %q; want web, x", got.Get("tags"), got.Get("description"))
	}
}

// wantMarkKept checks a comparison with pvectl's mark in live: the
// user's own values (same) are no drift; after in key instead is a diff
// from before, and its update sends sent, the mark kept.
func wantMarkKept(t *testing.T, live *pve.Config, same map[string]string, key, before, after, sent string) {
	t.Helper()
	cmp := qemuComparer(t)
	if d := cmp.DiffParams(same, nil, live, nil); len(d) != 0 {
		t.Errorf("the user's own values: got diff %v want none", d)
	}
	d := cmp.DiffParams(map[string]string{key: after}, nil, live, nil)
	if diff := gocmp.Diff([]engine.FieldDiff{{Path: key, Before: before, After: after}}, d); diff != "" {
		t.Errorf("changed %s (-want +got):\n%s", key, diff)
	}
	params := cmp.UpdateParams(d, map[string]string{key: after}, live, nil)
	if got := params[key]; got != sent {
		t.Errorf("update keeps the mark: got %q want %q", got, sent)
	}
}

// TestOwnerCreateParams: a create writes the mark for the vmid it gets;
// a change without a stack writes none.
func TestOwnerCreateParams(t *testing.T) {
	c := &engine.Change{Resource: &spec.Resource{Kind: "QemuVM", Name: "web"}, State: &guestState{Owner: "prod"}}
	params := url.Values{"description": {"hello"}, "tags": {"web"}}
	ownerValues(c, params, 123)
	if got, want := params.Get("description"), "hello\n[pvectl-owner: stack=prod,vmid=123]"; got != want {
		t.Errorf("description %q, want %q", got, want)
	}
	if got, want := params.Get("tags"), "web;pvectl"; got != want {
		t.Errorf("tags %q, want %q", got, want)
	}
	plain := url.Values{}
	ownerValues(&engine.Change{State: &guestState{}}, plain, 123)
	if len(plain) != 0 {
		t.Errorf("no stack: params %v, want none", plain)
	}
}

// TestDescriptionBlockNotDrift: pvectl's blocks in a live description are
// neither drift nor lost when the user's text changes.
func TestDescriptionBlockNotDrift(t *testing.T) {
	live := pve.ConfigOf(map[string]string{"description": "web server\n[pvectl-provision: a.yaml=0123456789ab]\n"})
	wantMarkKept(t, live, map[string]string{"description": "web server"},
		"description", "web server", "db server", "db server\n[pvectl-provision: a.yaml=0123456789ab]")
}
