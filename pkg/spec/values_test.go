package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestLoadValues checks the wire form of spec values.
func TestLoadValues(t *testing.T) {
	tests := []struct {
		name       string
		kind, spec string
		docName    string // default "x"
		env        func(string) (string, bool)
		wantParams map[string]string
		wantRemove []string
		wantOwn    map[string]any
	}{
		{
			name: "scalars: booleans 1/0, numbers decimal, strings as written",
			kind: "QemuVM",
			spec: "vmid: 0x64\nmemory: 2048\ncores: 1_0\ncpulimit: 1.50\nonboot: true\nacpi: false\ndescription: \"007\"\nrunning: false",
			wantParams: map[string]string{
				"name": "x", "vmid": "100", "memory": "2048", "cores": "10", "cpulimit": "1.5",
				"onboot": "1", "acpi": "0", "description": "007",
			},
			wantOwn: map[string]any{"running": false},
		},
		{
			name: "property-string maps in written order, lists joined",
			kind: "QemuVM",
			spec: "net0: {model: virtio, bridge: vmbr0, tag: 100, firewall: true, rate: null, trunks: [10, 20]}\n" +
				"ipconfig0: {ip: 10.0.0.5/24, gw: 10.0.0.1}\nboot: {order: [scsi0, net0]}\ntags: [web, prod]",
			wantParams: map[string]string{
				"name": "x", "net0": "model=virtio,bridge=vmbr0,tag=100,firewall=1,trunks=10;20",
				"ipconfig0": "ip=10.0.0.5/24,gw=10.0.0.1", "boot": "order=scsi0;net0", "tags": "web;prod",
			},
		},
		{
			name:       "null removes, machine alias, identity set explicitly",
			kind:       "QemuVM",
			spec:       "name: other\nmachine: i440fx\npool: null\ntags: ~",
			wantParams: map[string]string{"name": "other", "machine": "pc"},
			wantRemove: []string{"pool", "tags"},
		},
		{
			name:       "bridge ports list space-separated, type fixed, iface from name",
			kind:       "LinuxBridge",
			docName:    "vmbr9",
			spec:       "node: pve\nbridge_ports: [eno2, eno3]\nbridge_vlan_aware: yes\nmtu: 9000",
			wantParams: map[string]string{"iface": "vmbr9", "type": "bridge", "node": "pve", "bridge_ports": "eno2 eno3", "bridge_vlan_aware": "1", "mtu": "9000"},
		},
		{
			// PVE's API takes only 1/0 for a boolean parameter.
			name:       "boolean parameters written as strings become 1/0",
			kind:       "QemuVM",
			spec:       "onboot: \"true\"\nnuma: off\nagent: yes\nscsi0: {file: \"local-lvm:8\", ssd: on}",
			wantParams: map[string]string{"name": "x", "onboot": "1", "numa": "0", "agent": "1", "scsi0": "file=local-lvm:8,ssd=1"},
		},
		{
			// YAML 1.2 reads 0100 as 100; the yaml decoder alone takes it for octal.
			name:       "decimal with leading zeros, numeric property string",
			kind:       "QemuVM",
			spec:       "vmid: 0100\nmemory: 2_048\nnet0: {model: virtio, tag: 010}",
			wantParams: map[string]string{"name": "x", "vmid": "100", "memory": "2048", "net0": "model=virtio,tag=10"},
		},
		{
			name:       "a variable holding null is a string, not a removal",
			kind:       "QemuVM",
			spec:       "description: ${D}\nciuser: ${U}",
			env:        env("D", "null", "U", "~"),
			wantParams: map[string]string{"name": "x", "description": "null", "ciuser": "~"},
		},
		{
			name:       "NetworkApply node from name",
			kind:       "NetworkApply",
			wantParams: map[string]string{"node": "x"},
		},
		{
			name:       "interpolation: unquoted re-typed, quoted stays a string, escapes",
			kind:       "QemuVM",
			spec:       "running: ${RUN:-true}\nonboot: ${ONBOOT}\ndescription: \"cost $$5, ${NOTE:-none} $${HOME}\"\ncores: ${CORES}",
			env:        env("ONBOOT", "false", "CORES", "4"),
			wantParams: map[string]string{"name": "x", "onboot": "0", "description": "cost $$5, none ${HOME}", "cores": "4"},
			wantOwn:    map[string]any{"running": true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := tt.docName
			if name == "" {
				name = "x"
			}
			doc := "kind: " + tt.kind + "\nname: " + name + "\n"
			if tt.spec != "" {
				doc += "spec:\n"
				for _, line := range splitLines(tt.spec) {
					doc += "  " + line + "\n"
				}
			}
			set := mustLoad(t, map[string]string{"a.yaml": doc}, tt.env)
			r := set.Resources[0]
			if diff := cmp.Diff(tt.wantParams, r.Params.Map()); diff != "" {
				t.Errorf("Params: got %v want %v (-want +got):\n%s", r.Params, tt.wantParams, diff)
			}
			if diff := cmp.Diff(tt.wantRemove, r.Remove); diff != "" {
				t.Errorf("Remove: got %v want %v (-want +got):\n%s", r.Remove, tt.wantRemove, diff)
			}
			if diff := cmp.Diff(tt.wantOwn, r.OwnFields(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Own: got %v want %v (-want +got):\n%s", r.OwnFields(), tt.wantOwn, diff)
			}
		})
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func TestInterpolate(t *testing.T) {
	getenv := env("A", "alpha", "EMPTY", "")
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "plain $HOME and $5", want: "plain $HOME and $5"},
		{in: "${A}-${A}", want: "alpha-alpha"},
		{in: "${B:-beta}", want: "beta"},
		{in: "${EMPTY:-fallback}", want: "fallback"},
		{in: "${EMPTY}", want: ""},
		{in: "${B:-}", want: ""},
		{in: "$${A} ${A}", want: "${A} alpha"},
		{in: "${B}", wantErr: "environment variable B is not set (write ${B:-default} for a default)"},
		{in: "${A", wantErr: `unterminated ${ in "${A" (write $${ for a literal ${)`},
		{in: "${1X}", wantErr: "invalid variable reference ${1X}: a name is letters, digits and _ (write $${ for a literal ${)"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := interpolate(tt.in, getenv)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if got != tt.want || gotErr != tt.wantErr {
				t.Errorf("interpolate(%q): got %q, %q want %q, %q", tt.in, got, gotErr, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseRef(t *testing.T) {
	tests := []struct {
		in      string
		want    Ref
		wantErr bool
	}{
		{in: "QemuVM/app", want: Ref{"QemuVM", "app"}},
		{in: "User/ci@pve", want: Ref{"User", "ci@pve"}},
		{in: "QemuVM", wantErr: true},
		{in: "/x", wantErr: true},
		{in: "QemuVM/", wantErr: true},
		{in: "a/b/c", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRef(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseRef(%q): got %v, %v want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	cands := []string{"memory", "cores", "net0", "running", "spec"}
	tests := []struct{ in, want string }{
		{"memroy", "memory"},
		{"Memory", "memory"},
		{"core", "cores"},
		{"nte0", "net0"},
		{"zzzzzz", ""},
		{"specs", "spec"},
	}
	for _, tt := range tests {
		if got := suggest(tt.in, cands); got != tt.want {
			t.Errorf("suggest(%q): got %q want %q", tt.in, got, tt.want)
		}
	}
}
