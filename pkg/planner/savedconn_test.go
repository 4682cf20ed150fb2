package planner

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// fixedClients hands out connection settings only.
type fixedClients map[string]*spec.Connection

func (f fixedClients) Client(string) (*pve.Client, error)      { return nil, nil }
func (f fixedClients) Connection(name string) *spec.Connection { return f[name] }

// A plan file keeps each connection's settings and the names of the
// variables its secrets came from, never a secret; apply rebuilds the
// connection from them and the environment.
func TestSavedConnectionRoundTrip(t *testing.T) {
	const tokenSecret, key = "0b6f5c1e-secret-9a7d", "-----BEGIN OPENSSH PRIVATE KEY-----"
	conn := &spec.Connection{
		Name: "lab", URL: "https://10.0.0.10:8006", TokenID: "ci@pve!deploy", User: "ci@pve", TokenName: "deploy",
		TokenSecret: tokenSecret, SSHPrivateKey: key, Nodes: []string{"pve1"}, TLSFingerprint: strings.Repeat("ab", 32),
		CAFile: "ca.pem", SecretEnv: map[string]string{"tokenSecret": "LAB_SECRET"},
	}
	p := &engine.Plan{FormatVersion: engine.FormatVersion, Changes: []*engine.Change{}, Endpoints: map[string]string{"lab": "https://10.0.0.10:8006/api2/json"}}
	p.RecordConnections(fixedClients{"lab": conn})
	data, got := marshalled(t, p)
	for _, s := range []string{tokenSecret, key} {
		if strings.Contains(string(data), s) {
			t.Errorf("the plan file holds a secret:\n%s", data)
		}
	}
	saved := got.Connections["lab"]
	if saved == nil {
		t.Fatalf("Connections: got %v, want lab", got.Connections)
	}
	abs, _ := filepath.Abs("ca.pem")
	env := map[string]string{"LAB_SECRET": tokenSecret}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c, err := saved.Connection("lab", getenv)
	if err != nil {
		t.Fatal(err)
	}
	want := &spec.Connection{
		Name: "lab", URL: conn.URL, TokenID: conn.TokenID, User: "ci@pve", TokenName: "deploy", TokenSecret: tokenSecret,
		Nodes: []string{"pve1"}, TLSFingerprint: conn.TLSFingerprint, CAFile: abs, SecretEnv: conn.SecretEnv,
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("rebuilt connection (-want +got):\n%s", diff)
	}

	delete(env, "LAB_SECRET")
	if _, err := saved.Connection("lab", getenv); err == nil || !strings.Contains(err.Error(), "connection lab: set LAB_SECRET") {
		t.Errorf("secret variable unset: got %v, want an error naming LAB_SECRET", err)
	}
	saved.SecretEnv = nil // the secret was written into the specs
	if _, err := saved.Connection("lab", getenv); err == nil || !strings.Contains(err.Error(), "pass the specs that define it with -f") {
		t.Errorf("secret from the specs: got %v, want an error pointing at -f", err)
	}
}
