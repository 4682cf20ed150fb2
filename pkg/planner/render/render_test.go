package render

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/planner"
	"github.com/pvectl/pvectl/pkg/spec"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// golden compares got with testdata/<TestName>.golden (rewritten with -update).
// goldenEach renders each named plan of plans() with render and checks
// it against its golden file, one subtest a plan.
func goldenEach(t *testing.T, render func(io.Writer, *planner.Plan) error, names ...string) {
	t.Helper()
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := render(&buf, plans()[name]); err != nil {
				t.Fatal(err)
			}
			golden(t, buf.Bytes())
		})
	}
}

func golden(t *testing.T, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", strings.ReplaceAll(t.Name(), "/", "_")+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", path, diff)
	}
}

func change(addr string, a planner.Action, diff []planner.FieldDiff, reasons ...string) *planner.Change {
	if diff == nil {
		diff = []planner.FieldDiff{}
	}
	if reasons == nil {
		reasons = []string{}
	}
	return &planner.Change{Address: addr, Action: a, Diff: diff, Reasons: reasons}
}

// kept marks a destroy's protected noop (for: the protected resource that
// needs it, "" when it is protected itself).
func kept(c *planner.Change, forAddr string) *planner.Change {
	c.Kept, c.KeptFor = true, forAddr
	return c
}

func plans() map[string]*planner.Plan {
	return map[string]*planner.Plan{
		"create": {FormatVersion: "1", Changes: []*planner.Change{
			change("LinuxBridge/vmbr1", planner.Create, []planner.FieldDiff{
				{Path: "autostart", After: "1"}, {Path: "bridge_ports", After: "eno2"},
				{Path: "bridge_vlan_aware", After: "1"}, {Path: "iface", After: "vmbr1"},
				{Path: "node", After: "pve"},
			}, "does not exist"),
			change("NetworkApply/pve", planner.ApplyNet, nil, "LinuxBridge/vmbr1 will stage a change"),
			change("QemuVM/app-vm-1", planner.Create, []planner.FieldDiff{
				{Path: "memory", After: "2048"}, {Path: "net1", After: "virtio,bridge=vmbr1,tag=100"},
				{Path: "node", After: "pve"}, {Path: "running", After: true},
			}, "does not exist"),
		}},
		"update": {FormatVersion: "1", Changes: []*planner.Change{
			change("LinuxBridge/vmbr1", planner.NoOp, nil),
			change("NetworkApply/pve", planner.NoOp, nil),
			change("QemuVM/app-vm-1", planner.Update, []planner.FieldDiff{
				{Path: "memory", Before: "2048", After: "4096"},
				{Path: "net1.tag", Before: "100", After: "200"},
				{Path: "tags", Before: "old", After: nil},
				{Path: "running", Before: false, After: true},
			}, "memory changed", "net1 changed", "tags removed", "power state stopped, wanted running"),
			change("QemuVM/db", planner.Replace, []planner.FieldDiff{{Path: "node", Before: "pve", After: "pve2"}}, "node changed: pve → pve2"),
		}},
		"destroy": {FormatVersion: "1", Destroy: true, Changes: []*planner.Change{
			change("QemuVM/app-vm-1", planner.Delete, nil, "destroy"),
			kept(change("QemuVM/db", planner.NoOp, nil, "protected: skipped"), ""),
			change("LinuxBridge/vmbr1", planner.Delete, nil, "destroy"),
			change("NetworkApply/pve", planner.ApplyNet, nil, "LinuxBridge/vmbr1 will stage a change"),
		}},
		// A destroy whose only VM is protected keeps its bridge too.
		"keptonly": {FormatVersion: "1", Destroy: true, Changes: []*planner.Change{
			kept(change("QemuVM/app-vm-1", planner.NoOp, nil, "protected: skipped"), ""),
			kept(change("LinuxBridge/vmbr1", planner.NoOp, nil, "protected: kept for QemuVM/app-vm-1"), "QemuVM/app-vm-1"),
			change("NetworkApply/pve", planner.NoOp, nil),
		}},
		// A bridge staged but never committed is a noop worth a note; so
		// is a locked VM. A destroy's "does not exist" is not.
		"staged": {FormatVersion: "1", Changes: []*planner.Change{
			change("LinuxBridge/vmbr1", planner.NoOp, nil, "node pve has staged network changes that no NetworkApply in these specs commits (add `kind: NetworkApply` for node pve)"),
			change("QemuVM/app-vm-1", planner.NoOp, nil, "locked (backup): a task is in progress"),
			change("QemuVM/gone", planner.NoOp, nil, "does not exist"),
		}},
		"stagedchange": {FormatVersion: "1", Changes: []*planner.Change{
			change("LinuxBridge/vmbr1", planner.NoOp, nil, "node pve has staged network changes that no NetworkApply in these specs commits (add `kind: NetworkApply` for node pve)"),
			change("QemuVM/app-vm-1", planner.Update, []planner.FieldDiff{{Path: "memory", Before: "2048", After: "4096"}}, "memory changed"),
		}},
		// A multi-line text is a line diff; a single-line one stays on its line.
		"multiline": {FormatVersion: "1", Changes: []*planner.Change{
			change("QemuVM/app-vm-1", planner.Update, []planner.FieldDiff{
				{Path: "description", Before: "Web server\nowner: ops\nticket: OPS-1\n", After: "Web server\nowner: platform\nticket: OPS-1\nsee runbook\n"},
				{Path: "name", Before: "app", After: "app-1"},
			}, "renamed from app (renamedFrom): VM 100 keeps its vmid, disks and addresses", "description changed", "name changed"),
		}},
		// sshkeys is URL-encoded on the wire: shown decoded, a key a line.
		"sshkeys": {FormatVersion: "1", Changes: []*planner.Change{
			change("QemuVM/app-vm-1", planner.Update, []planner.FieldDiff{
				{Path: "sshkeys", Before: "ssh-ed25519%20AAAAC3Nza%20ops%40laptop%0A", After: "ssh-ed25519%20AAAAC3Nza%20ops%40laptop%0Assh-ed25519%20AAAAC3Nzb%20ci%0A"},
			}, "sshkeys changed"),
			change("QemuVM/db", planner.Create, []planner.FieldDiff{
				{Path: "node", After: "pve"},
				{Path: "sshkeys", After: "ssh-ed25519%20AAAAC3Nza%20ops%40laptop%0A"},
			}, "does not exist"),
		}},
		// An update of what the user wrote as conveniences names them (the
		// labels); a VM written with PVE's keys keeps PVE's paths.
		"conveniences": {FormatVersion: "1", Changes: []*planner.Change{
			change("QemuVM/app-vm-1", planner.Update, []planner.FieldDiff{
				{Path: "ipconfig0.ip", Before: "10.0.0.5/24", After: "10.0.1.6/24", Label: "ip"},
				{Path: "ipconfig0.gw", Before: "10.0.0.1", After: "10.0.1.1", Label: "gateway"},
				{Path: "net0.bridge", Before: "vmbr0", After: "vmbr1", Label: "bridge"},
				{Path: "net0.tag", Before: "100", After: "200", Label: "vlan"},
				{Path: "sshkeys", Before: "ssh-ed25519%20AAAAC3Nza%20ops%40laptop%0A", After: "ssh-ed25519%20AAAAC3Nza%20ops%40laptop%0Assh-ed25519%20AAAAC3Nzb%20ci%0A", Label: "sshKeys"},
			}, "ipconfig0 changed", "net0 changed", "sshkeys changed"),
			change("QemuVM/db", planner.Update, []planner.FieldDiff{
				{Path: "ipconfig0.ip", Before: "10.0.0.7/24", After: "10.0.0.8/24"},
				{Path: "net0.tag", Before: "100", After: nil},
			}, "ipconfig0 changed", "net0 changed"),
		}},
		"nochange": {FormatVersion: "1", Changes: []*planner.Change{
			change("LinuxBridge/vmbr1", planner.NoOp, nil),
			change("QemuVM/app-vm-1", planner.NoOp, nil),
		}},
		// Provisioning: files that run on a VM that needs nothing else,
		// and on one that is created.
		"provision": {FormatVersion: "1", Changes: []*planner.Change{
			provisioned(change("QemuVM/app-vm-1", planner.Provision, nil, "provision: playbooks/app.yaml (changed), site.pp (forced)"),
				planner.ProvisionStep{File: "playbooks/app.yaml", Reason: "changed", Hash: "dabf664c904c", Recorded: "3b28da54ccc3"},
				planner.ProvisionStep{File: "site.pp", Reason: "forced", Hash: "0123456789ab", Recorded: "0123456789ab"}),
			provisioned(change("QemuVM/app-vm-2", planner.Create, []planner.FieldDiff{{Path: "memory", After: "2048"}}, "does not exist", "provision: playbooks/common.yaml (new)"),
				planner.ProvisionStep{File: "playbooks/common.yaml", Reason: "new", Hash: "3b28da54ccc3"}),
			change("QemuVM/db", planner.NoOp, nil),
		}},
	}
}

func provisioned(c *planner.Change, steps ...planner.ProvisionStep) *planner.Change {
	c.Provision = steps
	return c
}

func TestHuman(t *testing.T) {
	goldenEach(t, func(w io.Writer, p *planner.Plan) error { return Human(w, p, Options{}) }, "create", "update", "destroy", "nochange", "keptonly", "staged", "stagedchange", "provision", "multiline", "sshkeys", "conveniences")
}

func TestHumanColor(t *testing.T) {
	var plain, color bytes.Buffer
	p := plans()["update"]
	if err := Human(&plain, p, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := Human(&color, p, Options{Color: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b[") {
		t.Errorf("colour off: got ANSI escapes in %q", plain.String())
	}
	if !strings.Contains(color.String(), "\x1b[") {
		t.Errorf("colour on: got no ANSI escapes in %q", color.String())
	}
}

func TestJSON(t *testing.T) {
	goldenEach(t, JSON, "create", "update", "destroy", "nochange", "provision", "conveniences")
}

func TestJSONShape(t *testing.T) {
	var buf bytes.Buffer
	// The summary keeps the contract's six keys: a network commit is a
	// change of its own ("apply") but has no summary key.
	p := &planner.Plan{FormatVersion: "1", Endpoints: map[string]string{"": "https://a:8006/api2/json"}, Changes: []*planner.Change{
		{Address: "Pool/p", Action: planner.NoOp}, {Address: "NetworkApply/pve", Action: planner.ApplyNet},
	}}
	if err := JSON(&buf, p); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"format_version": "1",
		"changes": []any{
			map[string]any{"address": "Pool/p", "action": "noop", "diff": []any{}, "reasons": []any{}},
			map[string]any{"address": "NetworkApply/pve", "action": "apply", "diff": []any{}, "reasons": []any{}},
		},
		"summary": map[string]any{"create": 0.0, "update": 0.0, "replace": 0.0, "delete": 0.0, "provision": 0.0, "noop": 1.0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON: got %s (-want +got):\n%s", buf.String(), diff)
	}
}

func TestMarkdown(t *testing.T) {
	goldenEach(t, Markdown, "create", "update", "destroy", "nochange", "provision", "multiline", "sshkeys", "conveniences")
}

// TestMarkdownHostileValues: a value cannot end its code block, its table
// cell or inject HTML into the summary line.
func TestMarkdownHostileValues(t *testing.T) {
	p := &planner.Plan{FormatVersion: "1", Changes: []*planner.Change{
		change("QemuVM/a|b", planner.Update, []planner.FieldDiff{
			{Path: "description", Before: "x", After: "```\n</details><script>"},
		}, "description changed"),
	}}
	var buf bytes.Buffer
	if err := Markdown(&buf, p); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "````diff\n") {
		t.Errorf("fence not longer than the value's backticks:\n%s", out)
	}
	if !strings.Contains(out, "| `QemuVM/a\\|b` |") {
		t.Errorf("pipe not escaped in the table:\n%s", out)
	}
	if strings.Count(out, "</details>") != 2 { // the block's own and the one inside the fenced value
		t.Errorf("details blocks: %d closers:\n%s", strings.Count(out, "</details>"), out)
	}
	if !strings.Contains(out, "+     </details><script>\n````\n\n</details>") {
		t.Errorf("the value's lines are not inside the fenced block:\n%s", out)
	}
}

func TestValueKnownAfterApply(t *testing.T) {
	for in, want := range map[string]string{
		"/vms/${QemuVM/app.vmid}": `"/vms/${QemuVM/app.vmid}" (known after apply)`,
		"${HOME}":                 `"${HOME}"`,
		"512":                     "512",
	} {
		if got := value(in); got != want {
			t.Errorf("value(%q) = %s, want %s", in, got, want)
		}
	}
}

// A list item's change reads as the item's line after its symbol in the
// human plan; the JSON keeps the contract's path, before and after.
func TestHumanListItems(t *testing.T) {
	p := &planner.Plan{FormatVersion: planner.FormatVersion, Changes: []*planner.Change{{
		Address: "Firewall/dc", Action: planner.Update,
		Diff: []planner.FieldDiff{
			{Path: "rules[2]", After: "in ACCEPT tcp 22 from +admins", Line: "[2] in ACCEPT tcp 22 from +admins"},
			{Path: "rules[3]", Before: "[5] in DROP", After: "[3] in DROP", Line: "[3] moved from 5: in DROP"},
			{Path: "rules[4]", Before: "out ACCEPT", Line: "[4] out ACCEPT"},
		},
	}}}
	var b strings.Builder
	if err := Human(&b, p, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"      + [2] in ACCEPT tcp 22 from +admins\n", "      ~ [3] moved from 5: in DROP\n", "      - [4] out ACCEPT\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("human plan lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := JSON(&b, p); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "line") || !strings.Contains(b.String(), `"path":"rules[3]"`) {
		t.Errorf("JSON plan: %s", b.String())
	}
}

// A commit names what it commits: a node's network, or SDN's
// configuration cluster-wide.
func TestCommitVerbs(t *testing.T) {
	for kind, want := range map[string]string{
		"NetworkApply": "# NetworkApply/x will commit staged network changes",
		"SdnApply":     "# SdnApply/x will commit staged SDN configuration changes",
	} {
		p := &planner.Plan{FormatVersion: planner.FormatVersion, Changes: []*planner.Change{{
			Address: kind + "/x", Action: planner.ApplyNet, Resource: &spec.Resource{Kind: kind, Name: "x"},
			Diff: []planner.FieldDiff{}, Reasons: []string{},
		}}}
		var b strings.Builder
		if err := Human(&b, p, Options{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s: the plan lacks %q:\n%s", kind, want, b.String())
		}
	}
}
