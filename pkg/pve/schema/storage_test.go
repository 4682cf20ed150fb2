package schema

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStorageTypesMatchTheAPISchema holds the hand-read plugin table to
// what PVE's API schema derives from the same plugins (pve-common
// SectionConfig.pm): the type enum is the registered types; every option
// is a create parameter; a parameter only POST takes is fixed (or absent)
// in every type; a parameter PUT takes is changeable in at least one type;
// and no create parameter is left without a type (but authsupported,
// which RBDPlugin.pm defines and no type lists).
func TestStorageTypesMatchTheAPISchema(t *testing.T) {
	create, update := mustMethod(t, "POST", "/storage"), mustMethod(t, "PUT", "/storage/{storage}")
	typ, _ := create.Param("type")
	if diff := cmp.Diff(slices.Sorted(slices.Values(typ.Enum)), StorageTypeNames()); diff != "" {
		t.Errorf("storage types (-schema enum +table)\n%s", diff)
	}
	used := map[string]bool{"storage": true, "type": true}
	changeable := map[string]bool{}
	for _, name := range StorageTypeNames() {
		st, _ := LookupStorageType(name)
		for k, o := range st.Options {
			used[k] = true
			if _, ok := create.Param(k); !ok {
				t.Errorf("%s: option %s is no parameter of POST /storage", name, k)
			}
			_, inUpdate := update.Param(k)
			if !inUpdate && !o.Fixed {
				t.Errorf("%s: option %s is changeable in the table, but PUT /storage/{storage} does not take it", name, k)
			}
			if !o.Fixed {
				changeable[k] = true
			}
		}
		for _, c := range st.DefaultContent {
			if !st.HoldsContent(c) {
				t.Errorf("%s: default content %s is not content it holds", name, c)
			}
		}
		for _, k := range st.Sensitive {
			if !st.Takes(k) {
				t.Errorf("%s: sensitive %s is not an option", name, k)
			}
		}
		for _, k := range st.Marked {
			if !st.IsSensitive(k) {
				t.Errorf("%s: marked %s is not sensitive", name, k)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(create.Params)) {
		if !used[k] && k != "authsupported" {
			t.Errorf("POST /storage parameter %s is an option of no storage type", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(update.Params)) {
		switch k {
		case "storage", "delete", "digest":
			continue
		}
		if !changeable[k] {
			t.Errorf("PUT /storage/{storage} takes %s, but the table has it fixed (or absent) in every type", k)
		}
	}
}

func TestStorageTypeRequired(t *testing.T) {
	tests := []struct {
		typ            string
		required, fixd []string
	}{
		{"dir", []string{"path"}, []string{"path", "snapshot-as-volume-chain"}},
		{"nfs", []string{"export", "server"}, []string{"export", "path", "server", "snapshot-as-volume-chain"}},
		{"cifs", []string{"server", "share"}, []string{"path", "server", "share", "snapshot-as-volume-chain"}},
		{"lvm", []string{"vgname"}, []string{"base", "vgname"}},
		{"lvmthin", []string{"thinpool", "vgname"}, []string{"thinpool", "vgname"}},
		{"zfspool", []string{"pool"}, []string{"pool"}},
		{"rbd", nil, nil},
		{"pbs", []string{"datastore", "server"}, []string{"datastore", "server"}},
		{"esxi", []string{"server", "username"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.typ, func(t *testing.T) {
			st, ok := LookupStorageType(tc.typ)
			if !ok {
				t.Fatalf("no type %s", tc.typ)
			}
			if diff := cmp.Diff(tc.required, st.Required()); diff != "" {
				t.Errorf("required (-want +got)\n%s", diff)
			}
			if diff := cmp.Diff(tc.fixd, st.FixedOptions()); diff != "" {
				t.Errorf("fixed (-want +got)\n%s", diff)
			}
		})
	}
}
