package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Issue 23 acceptance: plan --out, then show --markdown gives a Markdown
// summary with the resources and no secret; show needs no connection.
func TestE2EShowSavedPlan(t *testing.T) {
	env := startSim(t)
	f := writeSpec(t, "show.yaml", `kind: Pool
name: reviewed
spec:
  comment: "made | for review"
---
kind: User
name: ci@pve
spec:
  comment: reviewer
`)
	plan := filepath.Join(t.TempDir(), "plan.out")
	env.run("plan", "-f", f, "--out", plan)

	// No PROXMOX_* at all: show reads only the file.
	md := env.runEnv(0, []string{}, "show", plan, "--markdown")
	containsAll(t, "show --markdown", md.stdout, "### pvectl plan", "**Plan: 2 to create", "| `+` | `Pool/reviewed` | will be created |", "<summary><code>User/ci@pve</code> will be created</summary>", "+ comment: \"made | for review\"")
	if strings.Contains(md.stdout, e2eTokenSecret) || strings.Contains(md.stderr, e2eTokenSecret) {
		t.Errorf("show --markdown printed the token secret:\n%s", md.stdout)
	}

	js := env.runEnv(0, []string{}, "show", plan, "--json")
	var got struct {
		Summary map[string]int `json:"summary"`
	}
	if err := json.Unmarshal([]byte(js.stdout), &got); err != nil || got.Summary["create"] != 2 {
		t.Errorf("show --json: %v %+v\n%s", err, got, js.stdout)
	}
	human := env.runEnv(0, []string{}, "show", plan)
	if !strings.Contains(human.stdout, "Plan: 2 to create") {
		t.Errorf("show:\n%s", human.stdout)
	}
	env.runEnv(3, []string{}, "show", plan, "--json", "--markdown")
	env.runEnv(3, []string{}, "show", filepath.Join(t.TempDir(), "missing.out"))
}

// Issue 23 (9): `pvectl sim -v` says how to stop it and logs each request
// on stderr — method, path and status, never the query string.
func TestE2ESimVerbose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pvectlBin, "sim", "--listen", "127.0.0.1:0", "-v")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	var url string
	re := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
		if sc.Text() == "Ctrl-C to stop." {
			break
		}
	}
	if url == "" {
		t.Fatal("sim did not say where it listens, or how to stop it")
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/api2/json/cluster/resources?type=vm", nil)
	req.Header.Set("Authorization", "PVEAPIToken=root@pam!pvectl=simulator")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "GET /api2/json/cluster/resources 200") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), "GET /api2/json/cluster/resources 200") || strings.Contains(stderr.String(), "type=vm") {
		t.Errorf("sim -v log: want the request without its query, got:\n%s", stderr.String())
	}
}
