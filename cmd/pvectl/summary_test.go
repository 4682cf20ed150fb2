package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner"
)

// Reverted interfaces and task warnings are outcomes too: the human
// summary counts and lists them, and --json carries them.
func TestSummaryRevertedAndWarnings(t *testing.T) {
	p := &planner.Plan{Changes: []*planner.Change{
		{Address: "QemuVM/vm", Action: planner.Create}, {Address: "BondInterface/bond0", Action: planner.Create},
		{Address: "NetworkApply/pve", Action: planner.ApplyNet},
	}}
	warning := "task " + viewUPID + " finished with warnings: w"
	res := &planner.Result{Done: []string{"QemuVM/vm"}, Warnings: map[string][]string{"QemuVM/vm": {warning}}}
	var out bytes.Buffer
	newProgressView(&out, false, false).summary(p, res, "apply")
	containsAll(t, "output", out.String(), "Apply complete: 1 created, 1 task warning.\n",
		"  task warnings (done, but read them):\n    QemuVM/vm: task qmclone 9000 on pve finished with warnings: w\n")
	res.Failed = map[string]error{"NetworkApply/pve": errors.New("apply network on node pve: reload failed")}
	res.Reverted = map[string]string{"BondInterface/bond0": "reverted: the network commit on node pve failed"}
	out.Reset()
	newProgressView(&out, false, false).summary(p, res, "apply")
	containsAll(t, "output", out.String(), "Apply incomplete: 1 created; 1 failed, 1 reverted, 1 task warning.\n",
		"  reverted (made, then undone):\n    BondInterface/bond0 (reverted: the network commit on node pve failed)\n")
	out.Reset()
	newProgressView(&out, true, false).summary(p, res, "apply")
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if got := addresses(line["reverted"]); len(got) != 1 || got[0] != "BondInterface/bond0" {
		t.Errorf("--json reverted: got %v", line["reverted"])
	}
	if got := addresses(line["warnings"]); len(got) != 1 || got[0] != "QemuVM/vm" {
		t.Errorf("--json warnings: got %v", line["warnings"])
	}
}
