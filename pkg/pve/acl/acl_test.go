package acl

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuiltinRoles(t *testing.T) {
	roles := BuiltinRoles()
	wantNames := []string{"Administrator", "NoAccess", "PVEAdmin", "PVEAuditor", "PVEDatastoreAdmin",
		"PVEDatastoreUser", "PVEMappingAdmin", "PVEMappingUser", "PVEPoolAdmin", "PVEPoolUser",
		"PVESDNAdmin", "PVESDNUser", "PVESysAdmin", "PVETemplateUser", "PVEUserAdmin", "PVEVMAdmin", "PVEVMUser"}
	if diff := cmp.Diff(wantNames, slices.Sorted(maps.Keys(roles))); diff != "" {
		t.Errorf("role names (-want +got):\n%s", diff)
	}
	tests := map[string]string{
		"NoAccess":         "",
		"PVEAuditor":       "Datastore.Audit,Mapping.Audit,Pool.Audit,SDN.Audit,Sys.Audit,VM.Audit,VM.GuestAgent.Audit",
		"PVEVMUser":        "VM.Audit,VM.Backup,VM.Config.CDROM,VM.Config.Cloudinit,VM.Console,VM.GuestAgent.Audit,VM.GuestAgent.FileRead,VM.GuestAgent.FileSystemMgmt,VM.GuestAgent.FileWrite,VM.PowerMgmt",
		"PVEDatastoreUser": "Datastore.AllocateSpace,Datastore.Audit",
		"PVESDNUser":       "SDN.Audit,SDN.Use",
		"PVEPoolUser":      "Pool.Audit",
		"PVEPoolAdmin":     "Pool.Allocate,Pool.Audit",
		"PVESysAdmin":      "Sys.Audit,Sys.Console,Sys.Syslog",
		"PVEUserAdmin":     "Group.Allocate,Realm.AllocateUser,User.Modify",
		"PVETemplateUser":  "VM.Audit,VM.Clone",
		"PVEMappingAdmin":  "Mapping.Audit,Mapping.Modify,Mapping.Use",
		"PVEVMAdmin": "VM.Allocate,VM.Audit,VM.Backup,VM.Clone,VM.Config.CDROM,VM.Config.CPU,VM.Config.Cloudinit," +
			"VM.Config.Disk,VM.Config.HWType,VM.Config.Memory,VM.Config.Network,VM.Config.Options,VM.Console," +
			"VM.GuestAgent.Audit,VM.GuestAgent.FileRead,VM.GuestAgent.FileSystemMgmt,VM.GuestAgent.FileWrite," +
			"VM.GuestAgent.Unrestricted,VM.Migrate,VM.PowerMgmt,VM.Replicate,VM.Snapshot,VM.Snapshot.Rollback",
	}
	for role, want := range tests {
		t.Run(role, func(t *testing.T) {
			got := strings.Join(slices.Sorted(maps.Keys(roles[role])), ",")
			if got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
	// Root-only privileges and Permissions.Modify are Administrator's alone;
	// PVEAdmin lacks Mapping.Modify too.
	for _, p := range []string{"Sys.Modify", "Sys.PowerMgmt", "Sys.Incoming", "Sys.AccessNetwork", "Realm.Allocate", "Permissions.Modify"} {
		if !roles["Administrator"][p] || roles["PVEAdmin"][p] {
			t.Errorf("%s: Administrator has it %v (want true), PVEAdmin %v (want false)", p, roles["Administrator"][p], roles["PVEAdmin"][p])
		}
	}
	if roles["PVEAdmin"]["Mapping.Modify"] || !roles["PVEAdmin"]["Mapping.Use"] || !roles["PVEAdmin"]["User.Modify"] {
		t.Errorf("PVEAdmin: got %v", slices.Sorted(maps.Keys(roles["PVEAdmin"])))
	}
	if n := len(Privileges()); n != len(roles["Administrator"]) || !ValidPrivilege("VM.Config.Cloudinit") || ValidPrivilege("VM.Nope") {
		t.Errorf("Privileges: %d, Administrator has %d", n, len(roles["Administrator"]))
	}
	roles["PVEAuditor"]["Sys.Modify"] = true // the caller's copy
	if BuiltinRoles()["PVEAuditor"]["Sys.Modify"] {
		t.Error("BuiltinRoles shares its maps")
	}
}

func TestRoleFor(t *testing.T) {
	tests := []struct {
		privs []string
		want  string
	}{
		{[]string{"VM.Audit"}, "PVEAuditor"},
		{[]string{"Pool.Audit", "Datastore.Audit"}, "PVEAuditor"},
		{[]string{"VM.Allocate"}, "PVEVMAdmin"},
		{[]string{"VM.PowerMgmt"}, "PVEVMUser"},
		{[]string{"VM.Config.Cloudinit", "VM.Config.CDROM"}, "PVEVMUser"},
		{[]string{"Datastore.AllocateSpace"}, "PVEDatastoreUser"},
		{[]string{"SDN.Use"}, "PVESDNUser"},
		{[]string{"Pool.Allocate"}, "PVEPoolAdmin"},
		{[]string{"Sys.Modify"}, "Administrator"},
		{[]string{"VM.Allocate", "Datastore.AllocateSpace"}, "PVEAdmin"},
	}
	for _, tc := range tests {
		if got := RoleFor(tc.privs...); got != tc.want {
			t.Errorf("RoleFor(%v): got %s, want %s", tc.privs, got, tc.want)
		}
	}
}

func TestPaths(t *testing.T) {
	norm := []struct{ in, want string }{
		{"/", "/"}, {"vms", "/vms"}, {"//vms//100/", "/vms/100"}, {"/sdn/zones/localnetwork/vmbr0", "/sdn/zones/localnetwork/vmbr0"},
		{"", ""}, {"/vms/1 00", ""}, {"/vms/10$", ""},
	}
	for _, tc := range norm {
		got, ok := NormalizePath(tc.in)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("NormalizePath(%q): got %q %v, want %q", tc.in, got, ok, tc.want)
		}
	}
	valid := []string{"/", "/vms", "/vms/100", "/storage/local-lvm", "/nodes/pve", "/pool/dev", "/pool/a/b/c",
		"/sdn/zones/localnetwork", "/sdn/zones/localnetwork/vmbr0", "/sdn/zones/localnetwork/vmbr0/100",
		"/access", "/access/groups/admins", "/access/realm/pve", "/mapping/pci/gpu"}
	invalid := []string{"/vms/99", "/vms/abc", "/storage/a/b", "/pool/a/b/c/d", "/sdn/zones/z/b/0", "/foo", "/nodes/pve/qemu"}
	for _, p := range valid {
		if !CheckPath(p) {
			t.Errorf("CheckPath(%q): got false, want true", p)
		}
	}
	for _, p := range invalid {
		if CheckPath(p) {
			t.Errorf("CheckPath(%q): got true, want false", p)
		}
	}
}
