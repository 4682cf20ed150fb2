package main

// End-to-end tests: the built pvectl binary against the simulator served over
// real HTTP on loopback. Every request the binary sends and every response
// the simulator gives is checked against the official PVE 9.1 API schema.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

const (
	e2eTokenID     = "root@pam!e2e"
	e2eTokenSecret = "5e3d1c0a-e2e0-4c1e-9f7a-000000000001"
)

var pvectlBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pvectl-e2e-")
	if err != nil {
		panic(err)
	}
	pvectlBin = filepath.Join(dir, "pvectl")
	build := exec.Command("go", "build", "-o", pvectlBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		panic("build pvectl: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// simEnv is one simulator behind the schema checker, with a request counter.
type simEnv struct {
	t        *testing.T
	url      string
	requests *simtest.Counter
	client   *pve.Client
	extraEnv []string // more variables for the binary
}

func startSim(t *testing.T) *simEnv {
	t.Helper()
	s := simtest.Start(t, simtest.Options{
		Sim:           pvesim.Options{TokenID: e2eTokenID, TokenSecret: e2eTokenSecret, TaskDuration: 30 * time.Millisecond, Seed: 1},
		Conformance:   true,
		ClientOptions: []pve.Option{pve.WithTaskPolling(10*time.Millisecond, 50*time.Millisecond)},
	})
	return &simEnv{t: t, url: s.URL, requests: s.Requests, client: s.Client}
}

type result struct {
	code           int
	stdout, stderr string
}

// run executes the binary with only the three connection variables set.
func (e *simEnv) run(args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pvectlBin, args...)
	cmd.Env = e.environ()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			e.t.Fatalf("run pvectl %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	res := result{code: code, stdout: out.String(), stderr: errb.String()}
	for _, s := range []string{res.stdout, res.stderr} {
		if strings.Contains(s, e2eTokenSecret) {
			e.t.Errorf("pvectl %v printed the token secret", args)
		}
	}
	return res
}

func (e *simEnv) mustRun(want int, args ...string) result {
	e.t.Helper()
	return wantExit(e.t, e.run(args...), want, args)
}

// wantExit fails the test unless r, pvectl's run with args, exited with
// want; it returns r.
func wantExit(t *testing.T, r result, want int, args []string) result {
	t.Helper()
	if r.code != want {
		t.Fatalf("pvectl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
	}
	return r
}

// example copies a shared or local example into a temp dir and returns its path.
func example(t *testing.T, name string, edit func(string) string) string {
	t.Helper()
	return writeSpec(t, name, exampleText(t, name, edit))
}

// examplesDir copies the examples names, each edited by edit (nil: none),
// into one new temporary directory and returns it.
func examplesDir(t *testing.T, edit func(string) string, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(exampleText(t, n, edit)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// exampleText is the text of a shared or local example, edited by edit
// (nil: none).
func exampleText(t *testing.T, name string, edit func(string) string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	// The product's examples, else the design's (testdata/examples).
	src := filepath.Join(root, "examples", name)
	if _, err := os.Stat(src); err != nil {
		src = filepath.Join(root, "testdata", "examples", name)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if edit != nil {
		s = edit(s)
	}
	return s
}

type jsonPlan struct {
	FormatVersion string `json:"format_version"`
	Changes       []struct {
		Address string `json:"address"`
		Action  string `json:"action"`
		Diff    []struct {
			Path   string `json:"path"`
			Before any    `json:"before"`
			After  any    `json:"after"`
		} `json:"diff"`
		Reasons []string `json:"reasons"`
	} `json:"changes"`
	Summary map[string]int `json:"summary"`
}

func parsePlan(t *testing.T, s string) jsonPlan {
	t.Helper()
	var p jsonPlan
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("plan --json output is not the contract's JSON: %v\n%s", err, s)
	}
	return p
}
