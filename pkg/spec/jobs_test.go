package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJobKindsLoad(t *testing.T) {
	set := mustLoad(t, map[string]string{"a.yaml": `kind: QemuVM
name: app
spec: {vmid: 120}
---
kind: HAResource
name: app
spec:
  guest: QemuVM/app
  state: started
  max_restart: 2
  failback: false
---
kind: HARule
name: app-on-pve
spec:
  type: node-affinity
  guests: [QemuVM/app]
  nodes: pve:2,pve2:1
  strict: true
---
kind: BackupJob
name: nightly
spec:
  schedule: "mon..fri 21:00"
  guests: [QemuVM/app, 9000]
  storage: local
  mode: snapshot
  prune-backups: {keep-last: 3}
---
kind: ReplicationJob
name: app-to-pve2
spec:
  guest: QemuVM/app
  target: pve2
  schedule: "*/15"
`}, nil)
	for _, tc := range []struct {
		addr string
		want map[string]string
	}{
		{"HAResource/app", map[string]string{"sid": "vm:${QemuVM/app.vmid}", "state": "started", "max_restart": "2", "failback": "0"}},
		{"HARule/app-on-pve", map[string]string{"rule": "app-on-pve", "type": "node-affinity", "resources": "vm:${QemuVM/app.vmid}", "nodes": "pve:2,pve2:1", "strict": "1"}},
		{"BackupJob/nightly", map[string]string{"id": "nightly", "schedule": "mon..fri 21:00", "vmid": "${QemuVM/app.vmid},9000", "storage": "local",
			"mode": "snapshot", "prune-backups": "keep-last=3"}},
		{"ReplicationJob/app-to-pve2", map[string]string{"guest": "${QemuVM/app.vmid}", "target": "pve2", "schedule": "*/15", "type": "local"}},
	} {
		r := set.Lookup(tc.addr)
		if r == nil {
			t.Fatalf("%s not loaded", tc.addr)
		}
		if diff := cmp.Diff(tc.want, r.Params.Map()); diff != "" {
			t.Errorf("%s params (-want +got)\n%s", tc.addr, diff)
		}
	}
	// The HAResource of its guest, and the guest whose vmid its
	// resources name (an output reference).
	if deps := set.Lookup("HARule/app-on-pve").DependsOn; len(deps) != 2 || deps[0].String() != "HAResource/app" || deps[1].String() != "QemuVM/app" {
		t.Errorf("HARule depends on %v, want the HAResource of its guest and the guest", deps)
	}
}

// What PVE would refuse is found by validate, at the line.
func TestJobKindsDiagnostics(t *testing.T) {
	tests := []struct {
		name, spec string
		want       []string
	}{
		{
			name: "a schedule PVE cannot parse",
			spec: "kind: BackupJob\nname: nightly\nspec:\n  all: true\n  schedule: every night at 9\n",
			want: []string{`a.yaml:5: spec.schedule: invalid format - invalid calendar event 'every night at 9' - unable to parse weekday specification 'every'`},
		},
		{
			name: "an hour out of range",
			spec: "kind: BackupJob\nname: nightly\nspec:\n  all: true\n  schedule: \"25:00\"\n",
			want: []string{`a.yaml:5: spec.schedule: invalid format - invalid calendar event '25:00' - value '25' out of range`},
		},
		{
			name: "a backup job of nothing",
			spec: "kind: BackupJob\nname: nightly\nspec:\n  schedule: daily\n",
			want: []string{`a.yaml:1: BackupJob/nightly: the job backs up nothing: write guests, all: true (with exclude) or pool (PVE: vmid: property is missing)`},
		},
		{
			name: "guests and all",
			spec: "kind: BackupJob\nname: nightly\nspec:\n  schedule: daily\n  all: true\n  guests: [100]\n",
			want: []string{`a.yaml:5: BackupJob/nightly: all conflicts with guests (PVE: option conflicts with option 'vmid'): choose guests, all (with exclude) or pool`},
		},
		{
			name: "not a guest",
			spec: "kind: HAResource\nname: x\nspec:\n  guest: Pool/app\n",
			want: []string{`a.yaml:4: HAResource/x: guest: "Pool/app" is not a guest: write QemuVM/<name>, LxcContainer/<name> or a vmid`},
		},
		{
			name: "no guest",
			spec: "kind: HAResource\nname: x\nspec:\n  state: started\n",
			want: []string{`a.yaml:1: HAResource/x: spec.guest is required: the guest to make highly available (QemuVM/<name>), or PVE's sid (vm:<vmid>)`},
		},
		{
			name: "a node-affinity rule without nodes",
			spec: "kind: HARule\nname: r1\nspec:\n  type: node-affinity\n  resources: vm:100\n",
			want: []string{`a.yaml:4: HARule/r1: a node-affinity rule needs spec.nodes (PVE refuses it without: missing value for required option 'nodes')`},
		},
		{
			name: "affinity on a node-affinity rule",
			spec: "kind: HARule\nname: r1\nspec:\n  type: node-affinity\n  resources: vm:100\n  nodes: pve\n  affinity: positive\n",
			want: []string{`a.yaml:7: HARule/r1: affinity is an option of resource-affinity rules only (PVE refuses it for a node-affinity rule: unexpected property 'affinity')`},
		},
		{
			name: "a rule's guest by a bare vmid",
			spec: "kind: HARule\nname: r1\nspec:\n  type: node-affinity\n  guests: [100]\n  nodes: pve\n",
			want: []string{`a.yaml:5: HARule/r1: guests: 100: a rule names each guest with its type: write QemuVM/<name> or LxcContainer/<name>, or spec.resources as vm:100 or ct:100`},
		},
		{
			name: "an HA rule without a type",
			spec: "kind: HARule\nname: r1\nspec:\n  resources: vm:100\n  nodes: pve\n",
			want: []string{`a.yaml:1: HARule/r1: spec.type is required: node-affinity (with nodes) or resource-affinity (with affinity)`},
		},
		{
			name: "a retention key PVE does not know",
			spec: "kind: BackupJob\nname: nightly\nspec:\n  schedule: daily\n  all: true\n  prune-backups: {keep-lastt: 3}\n",
			want: []string{`a.yaml:6: spec.prune-backups: invalid format - property 'keep-lastt' is not defined — did you mean "keep-last"? (allowed: keep-all, keep-daily, keep-hourly, keep-last, keep-monthly, keep-weekly, keep-yearly)`},
		},
		{
			name: "a replication job without target",
			spec: "kind: ReplicationJob\nname: r\nspec:\n  guest: QemuVM/app\n",
			want: []string{`a.yaml:1: ReplicationJob/r: spec.target is required: the node the guest's volumes replicate to`,
				"a.yaml:4: ReplicationJob/r.guest: ${QemuVM/app.vmid} names QemuVM/app, which is not defined in the given files"},
		},
		{
			name: "two replication jobs for one guest and target",
			spec: "kind: ReplicationJob\nname: a\nspec: {guest: 100, target: pve2}\n---\nkind: ReplicationJob\nname: b\nspec: {guest: 100, target: pve2}\n",
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := loadFiles(t, map[string]string{"a.yaml": tt.spec}, nil)
			if tt.want == nil {
				if len(got) == 0 {
					t.Fatalf("got no diagnostics, want a clash")
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("diagnostics (-want +got)\n%s", diff)
			}
		})
	}
}
