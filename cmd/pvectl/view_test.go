package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner"
)

// TestOutputShownOnce: a one-time secret appears exactly once, in the
// marked block after the summary; a JSON line names it without its value
// and the block goes to the error stream instead.
func TestOutputShownOnce(t *testing.T) {
	const secret = "5f0c1e2d-secret-value"
	c := &planner.Change{Address: "APIToken/ci", Action: planner.Create}
	p := &planner.Plan{Changes: []*planner.Change{c}}
	res := &planner.Result{Done: []string{c.Address}}

	var out bytes.Buffer
	v := newProgressView(&out, false, false)
	v.Output(c, "value", secret, true)
	v.Output(c, "full-tokenid", "ci@pve!deploy", false)
	v.summary(p, res, "apply")
	if n := strings.Count(out.String(), secret); n != 1 {
		t.Errorf("human output shows the secret %d times, want once:\n%s", n, out.String())
	}
	if i, j := strings.Index(out.String(), "Apply complete"), strings.Index(out.String(), secret); j < i {
		t.Errorf("the secret comes before the summary:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "APIToken/ci: full-tokenid = ci@pve!deploy") {
		t.Errorf("a non-secret output is shown where it happens:\n%s", out.String())
	}

	var lines, errs bytes.Buffer
	v = newProgressView(&lines, true, false)
	v.secrets = &errs
	v.Output(c, "value", secret, true)
	v.summary(p, res, "apply")
	if strings.Contains(lines.String(), secret) {
		t.Errorf("JSON lines hold the secret:\n%s", lines.String())
	}
	if !strings.Contains(lines.String(), `"type":"output"`) || !strings.Contains(lines.String(), `"sensitive":true`) {
		t.Errorf("JSON lines lack the output event:\n%s", lines.String())
	}
	if n := strings.Count(errs.String(), secret); n != 1 {
		t.Errorf("error stream shows the secret %d times, want once:\n%s", n, errs.String())
	}
}
