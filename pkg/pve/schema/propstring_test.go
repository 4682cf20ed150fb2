package schema

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePropertyString(t *testing.T) {
	qm := mustMethod(t, "POST", "/nodes/{node}/qemu")
	net, _ := qm.Param("net0")
	ipc, _ := qm.Param("ipconfig0")
	tests := []struct {
		name    string
		in      string
		p       *Param
		want    []KV
		wantErr string
	}{
		{"key alias", "virtio=BC:24:11:00:00:01,bridge=vmbr0", net,
			[]KV{{"model", "virtio"}, {"macaddr", "BC:24:11:00:00:01"}, {"bridge", "vmbr0"}}, ""},
		{"default key", "e1000,bridge=vmbr0", net, []KV{{"model", "e1000"}, {"bridge", "vmbr0"}}, ""},
		{"nil param", "foo,a=b", nil, []KV{{"", "foo"}, {"a", "b"}}, ""},
		{"quoted comma", `a="x,y",b=2`, nil, []KV{{"a", "x,y"}, {"b", "2"}}, ""},
		{"quoted escapes", `a="say \"hi\" \\o/"`, nil, []KV{{"a", `say "hi" \o/`}}, ""},
		{"empty parts skipped", "a=1,,b=2,", nil, []KV{{"a", "1"}, {"b", "2"}}, ""},
		{"named format", "ip=dhcp,ip6=auto", ipc, []KV{{"ip", "dhcp"}, {"ip6", "auto"}}, ""},
		{"no default key", "dhcp", ipc, nil, "value without key, but schema does not define a default key"},
		{"missing key", "=x", nil, nil, "missing key in comma-separated list property"},
		{"key without value", "a=,b=2", nil, nil, "missing key in comma-separated list property"},
		{"blank value kept", "a= ", nil, []KV{{"a", " "}}, ""},
		{"duplicate", "a=1,a=2", nil, nil, "duplicate key in comma-separated list property: a"},
		{"alias dup", "virtio=BC:24:11:00:00:01,model=e1000", net, nil, "duplicate key in comma-separated list property: model"},
		{"unterminated", `a="x`, nil, nil, "unterminated quoted string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePropertyString(tt.in, tt.p)
			wantResult(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestFormatPropertyString(t *testing.T) {
	qm := mustMethod(t, "POST", "/nodes/{node}/qemu")
	net, _ := qm.Param("net0")
	scsi, _ := qm.Param("scsi0")
	tests := []struct {
		name  string
		items []KV
		p     *Param
		want  string
	}{
		{"net as PVE writes it", []KV{{"bridge", "vmbr0"}, {"macaddr", "BC:24:11:00:00:01"}, {"model", "virtio"}, {"tag", "100"}}, net,
			"virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=100"},
		{"net without mac", []KV{{"bridge", "vmbr0"}, {"model", "virtio"}}, net, "virtio,bridge=vmbr0"},
		{"disk default key first", []KV{{"discard", "on"}, {"file", "local-lvm:32"}}, scsi, "local-lvm:32,discard=on"},
		{"nil param bare item", []KV{{"a", "1"}, {"", "x"}}, nil, "x,a=1"},
		{"quotes commas", []KV{{"a", "x,y"}}, nil, `a="x,y"`},
		{"quotes default with equals", []KV{{"", "a=b"}}, nil, `"a=b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatPropertyString(tt.items, tt.p); got != tt.want {
				t.Errorf("got %q want %q", got, tt.want)
			}
		})
	}
}

func TestPropertyStringRoundTrip(t *testing.T) {
	qm := mustMethod(t, "POST", "/nodes/{node}/qemu")
	net, _ := qm.Param("net0")
	for _, in := range []string{
		"virtio=BC:24:11:00:00:01,bridge=vmbr0,firewall=1",
		"e1000,bridge=vmbr1,tag=20",
	} {
		t.Run(in, func(t *testing.T) {
			items, err := ParsePropertyString(in, net)
			if err != nil {
				t.Fatal(err)
			}
			if got := FormatPropertyString(items, net); got != in {
				t.Errorf("got %q want %q", got, in)
			}
		})
	}
}

func TestSplitPropertyString(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []KV
		wantErr string
	}{
		{"bare first", "local-lvm:vm-100-disk-0,size=4G", []KV{{"", "local-lvm:vm-100-disk-0"}, {"size", "4G"}}, ""},
		{"key alias kept as written", "virtio=BC:24:11:00:00:01,bridge=vmbr0", []KV{{"virtio", "BC:24:11:00:00:01"}, {"bridge", "vmbr0"}}, ""},
		{"quoted", `order="a,b",x=1`, []KV{{"order", "a,b"}, {"x", "1"}}, ""},
		{"empty", "", []KV{}, ""},
		{"two bare items", "a,b", nil, "duplicate key in comma-separated list property: "},
		{"unterminated", `a="x`, nil, "unterminated quoted string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SplitPropertyString(tt.in)
			wantResult(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestPropHelpers(t *testing.T) {
	items := []KV{{"", "vol"}, {"size", "4G"}, {"media", "cdrom"}}
	orig := append([]KV(nil), items...)
	if v, ok := PropValue(items, "size"); !ok || v != "4G" {
		t.Errorf("PropValue size: got %q %v want 4G true", v, ok)
	}
	if v, ok := PropValue(items, ""); !ok || v != "vol" {
		t.Errorf("PropValue bare: got %q %v want vol true", v, ok)
	}
	if _, ok := PropValue(items, "ssd"); ok {
		t.Errorf("PropValue ssd: got ok want absent")
	}
	tests := []struct {
		name string
		got  []KV
		want []KV
	}{
		{"set replaces", SetProp(items, "size", "8G"), []KV{{"", "vol"}, {"size", "8G"}, {"media", "cdrom"}}},
		{"set appends", SetProp(items, "ssd", "1"), []KV{{"", "vol"}, {"size", "4G"}, {"media", "cdrom"}, {"ssd", "1"}}},
		{"delete", DeleteProp(items, "size"), []KV{{"", "vol"}, {"media", "cdrom"}}},
		{"delete absent", DeleteProp(items, "ssd"), orig},
		{"input untouched", items, orig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
