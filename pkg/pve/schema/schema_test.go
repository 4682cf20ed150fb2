package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const apidocPath = "../../../testdata/pve-api/apidoc-9.1.json"

// TestFactsUpToDate regenerates the table from the apidoc and compares it
// with the embedded one, so a schema or generator change cannot be forgotten.
func TestFactsUpToDate(t *testing.T) {
	f, err := os.Open(apidocPath)
	if err != nil {
		t.Fatalf("open apidoc: %v", err)
	}
	defer f.Close()
	fresh, err := FromAPIDoc(f)
	if err != nil {
		t.Fatalf("FromAPIDoc: %v", err)
	}
	var want, got bytes.Buffer
	if err := fresh.encodeFacts(&want); err != nil {
		t.Fatal(err)
	}
	if err := Default().encodeFacts(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("embedded facts.json.gz is stale: run go generate ./pkg/pve/schema")
	}
}

func TestFactsRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := Default().WriteFacts(&buf); err != nil {
		t.Fatal(err)
	}
	again, err := ReadFacts(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Default().Methods, again.Methods); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestDefaultHasMethods(t *testing.T) {
	tests := []struct {
		method, path string
		params       []string
	}{
		{"POST", "/nodes/{node}/qemu", []string{"vmid", "node", "net[n]", "scsi[n]", "memory", "ipconfig[n]", "boot", "tags"}},
		{"GET", "/version", nil},
		{"POST", "/nodes/{node}/network", []string{"iface", "type", "bridge_vlan_aware"}},
		{"POST", "/nodes/{node}/lxc", []string{"mp[n]", "dev[n]", "net[n]"}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			m, ok := Default().Lookup(tt.method, tt.path)
			if !ok {
				t.Fatalf("Lookup(%s, %s): not found", tt.method, tt.path)
			}
			for _, p := range tt.params {
				if _, ok := m.Params[p]; !ok {
					t.Errorf("param %q missing; got %d params", p, len(m.Params))
				}
			}
		})
	}
}

func TestNoDescriptionsInFacts(t *testing.T) {
	b, err := json.Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	// A description from the apidoc and a format_description: neither may
	// reach the embedded table.
	for _, text := range []string{"The (unique) ID of the VM.", "Network Card Model"} {
		if bytes.Contains(b, []byte(text)) {
			t.Errorf("facts contain apidoc text %q", text)
		}
	}
}
