package schema

import (
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mustMethod is the schema's method at path (the test stops without it).
func mustMethod(t testing.TB, method, path string) *Method {
	t.Helper()
	m, ok := Default().Lookup(method, path)
	if !ok {
		t.Fatalf("Lookup(%s, %s): not found", method, path)
	}
	return m
}

// wantCheck checks value against m's parameter param: want is the error
// PVE's schema check gives ("" none).
func wantCheck(t *testing.T, m *Method, param, value, want string) {
	t.Helper()
	p, ok := m.Param(param)
	if !ok {
		t.Fatalf("Param(%q): not found", param)
	}
	if got := errText(p.Check(value)); got != want {
		t.Errorf("Check(%q) on %s:\ngot  %q\nwant %q", value, param, got, want)
	}
}

// errText is err's message, "" for none.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// wantResult checks a call's result and error message ("" none).
func wantResult[T any](t *testing.T, got T, err error, want T, wantErr string) {
	t.Helper()
	if gotErr := errText(err); gotErr != wantErr {
		t.Fatalf("error: got %q want %q", gotErr, wantErr)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

func TestParamCheckQemuCreate(t *testing.T) {
	m := mustMethod(t, "POST", "/nodes/{node}/qemu")
	tests := []struct {
		name, param, value, want string
	}{
		{"vmid ok", "vmid", "100", ""},
		{"vmid below range", "vmid", "99", "value must have a minimum value of 100"},
		{"vmid not integer", "vmid", "abc", "type check ('integer') failed - got 'abc'"},
		{"vmid above range", "vmid", "1000000000", "value must have a maximum value of 999999999"},
		{"net0 virtio alias", "net0", "virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=100", ""},
		{"net0 bare model", "net0", "virtio,bridge=vmbr0,firewall=1", ""},
		{"net0 model key", "net0", "model=e1000,bridge=vmbr0", ""},
		{"net0 unknown key", "net0", "virtio,bridge=vmbr0,foo=bar", "invalid format - property 'foo' is not defined"},
		{"net0 tag range", "net0", "virtio,bridge=vmbr0,tag=4095", "invalid format - tag: value must have a maximum value of 4094"},
		{"net0 model missing", "net0", "bridge=vmbr0", "invalid format - model: property is missing and it is not optional"},
		{"net0 bad model", "net0", "rtl9999,bridge=vmbr0", "invalid format - model: value 'rtl9999' does not have a value in the enumeration 'e1000, e1000-82540em, e1000-82544gc, e1000-82545em, e1000e, i82551, i82557b, i82559er, ne2k_isa, ne2k_pci, pcnet, rtl8139, virtio, vmxnet3'"},
		{"net0 multicast mac", "net0", "virtio=01:24:11:00:00:01", "invalid format - macaddr: invalid format - value does not look like a valid unicast MAC address"},
		{"net0 bool firewall", "net0", "virtio,firewall=maybe", "invalid format - firewall: type check ('boolean') failed - got 'maybe'"},
		{"net0 trunks pattern", "net0", "virtio,trunks=10;20-30", ""},
		{"net0 trunks bad", "net0", "virtio,trunks=10,20", "invalid format - duplicate key in comma-separated list property: model"},
		{"net0 duplicate", "net0", "virtio,model=e1000", "invalid format - duplicate key in comma-separated list property: model"},
		{"scsi0 new disk", "scsi0", "local-lvm:32,discard=on,ssd=1", ""},
		{"scsi0 import", "scsi0", "local-lvm:0,import-from=local:import/noble.qcow2", ""},
		{"scsi0 bad cache", "scsi0", "local-lvm:32,cache=fast", "invalid format - cache: value 'fast' does not have a value in the enumeration 'none, writethrough, writeback, unsafe, directsync'"},
		{"memory plain", "memory", "2048", ""},
		{"memory current", "memory", "current=4096", ""},
		{"memory too small", "memory", "8", "invalid format - current: value must have a minimum value of 16"},
		{"memory not integer", "memory", "2G", "invalid format - current: type check ('integer') failed - got '2G'"},
		{"ipconfig dhcp", "ipconfig0", "ip=dhcp", ""},
		{"ipconfig static", "ipconfig0", "ip=10.0.0.5/24,gw=10.0.0.1", ""},
		{"ipconfig v6 auto", "ipconfig1", "ip6=auto", ""},
		{"ipconfig bad ip", "ipconfig0", "ip=10.0.0.5", "invalid format - ip: invalid format - invalid IPv4 configuration: 10.0.0.5"},
		{"ipconfig bad gw", "ipconfig0", "ip=dhcp,gw=nope", "invalid format - gw: invalid format - value does not look like a valid IPv4 address"},
		{"ipconfig unknown", "ipconfig0", "ip=dhcp,dns=1.1.1.1", "invalid format - property 'dns' is not defined"},
		{"boot order", "boot", "order=scsi0;ide2;net0", ""},
		{"boot legacy", "boot", "cdn", ""},
		{"boot bad device", "boot", "order=scsi0;floppy0", "invalid format - order: invalid format - invalid boot device 'floppy0'"},
		{"boot bad legacy", "boot", "xyz", "invalid format - legacy: value does not match the regex pattern"},
		{"tags", "tags", "web;prod", ""},
		{"tags bad", "tags", "web;-prod", "invalid format - invalid tag '-prod'"},
		{"sshkeys urlencoded", "sshkeys", "ssh-ed25519%20AAAA%20me%40host%0A", ""},
		{"sshkeys raw", "sshkeys", "ssh-ed25519 AAAA me@host", "invalid format - invalid urlencoded string: ssh-ed25519 AAAA me@host"},
		{"onboot boolean 1", "onboot", "1", ""},
		// PVE's JSONSchema takes only 1/0 for a boolean parameter.
		{"onboot boolean yes", "onboot", "yes", "type check ('boolean') failed - got 'yes'"},
		{"onboot boolean true", "onboot", "true", "type check ('boolean') failed - got 'true'"},
		// ... but parse_property_string reads keyed boolean sub-values leniently,
		{"disk keyed boolean on", "scsi0", "local-lvm:32,ssd=on,iothread=true,backup=no", ""},
		{"disk keyed boolean bad", "scsi0", "local-lvm:32,ssd=maybe", "invalid format - ssd: type check ('boolean') failed - got 'maybe'"},
		// ... and not a bare default-key value.
		{"agent bare true", "agent", "true", "invalid format - enabled: type check ('boolean') failed - got 'true'"},
		{"agent keyed true", "agent", "enabled=true", ""},
		{"onboot boolean bad", "onboot", "2", "type check ('boolean') failed - got '2'"},
		{"ostype enum", "ostype", "l26", ""},
		{"ostype bad enum", "ostype", "dos", "value 'dos' does not have a value in the enumeration 'other, wxp, w2k, w2k3, w2k8, wvista, win7, win8, win10, win11, l24, l26, solaris'"},
		{"startup", "startup", "order=1,up=30", ""},
		{"startup bare", "startup", "2", ""},
		{"startup bad", "startup", "order=-1", "invalid format - order: value must have a minimum value of 0"},
		{"machine pattern", "machine", "q35", ""},
		{"machine pattern bad", "machine", "z80", "invalid format - type: value does not match the regex pattern"},
		{"pool", "pool", "prod", ""},
		{"storage", "storage", "local-lvm", ""},
		{"storage bad", "storage", "local lvm", "invalid format - storage ID 'local lvm' contains illegal characters"},
		{"description too long", "description", string(make([]byte, 8193)), "value may only be 8192 characters long"},
		{"cores min", "cores", "0", "value must have a minimum value of 1"},
		{"balloon number", "balloon", "1024", ""},
		{"cpuunits", "cpuunits", "100", ""},
		{"hostpci mapping", "hostpci0", "mapping=gpu,pcie=1", ""},
		{"hostpci host", "hostpci0", "0000:01:00.0;0000:01:00.1,x-vga=1", ""},
		{"hostpci bad key", "hostpci0", "mapping=gpu,vga=1", "invalid format - property 'vga' is not defined"},
		{"cpu host", "cpu", "host,flags=+aes;-pcid", ""},
		{"cpu bad flags", "cpu", "host,flags=aes", "invalid format - flags: value does not match the regex pattern"},
		{"cicustom", "cicustom", "user=local:snippets/user.yaml", ""},
		{"rng source required", "rng0", "period=1000", "invalid format - source: property is missing and it is not optional"},
		{"watchdog", "watchdog", "i6300esb,action=reset", ""},
		{"numa", "numa0", "cpus=0-3,memory=1024", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCheck(t, m, tt.param, tt.value, tt.want)
		})
	}
}

func TestParamCheckOtherSurfaces(t *testing.T) {
	tests := []struct {
		name, method, path, param, value, want string
	}{
		{"bridge_vlan_aware 1", "POST", "/nodes/{node}/network", "bridge_vlan_aware", "1", ""},
		{"bridge_vlan_aware true", "POST", "/nodes/{node}/network", "bridge_vlan_aware", "true", "type check ('boolean') failed - got 'true'"},
		{"bridge_vlan_aware bad", "POST", "/nodes/{node}/network", "bridge_vlan_aware", "enabled", "type check ('boolean') failed - got 'enabled'"},
		{"iface", "POST", "/nodes/{node}/network", "iface", "vmbr1", ""},
		{"iface vlan", "POST", "/nodes/{node}/network", "iface", "vmbr0.100", ""},
		{"iface bad", "POST", "/nodes/{node}/network", "iface", "1vmbr", "invalid format - invalid network interface name '1vmbr'"},
		{"bridge_ports list", "POST", "/nodes/{node}/network", "bridge_ports", "eno1 eno2", ""},
		{"slaves comma list", "POST", "/nodes/{node}/network", "slaves", "eno1,eno2", ""},
		{"bond_mode", "POST", "/nodes/{node}/network", "bond_mode", "802.3ad", ""},
		{"cidr", "POST", "/nodes/{node}/network", "cidr", "192.168.1.2/24", ""},
		{"cidr bad", "POST", "/nodes/{node}/network", "cidr", "192.168.1.2", "invalid format - value does not look like a valid IPv4 CIDR network"},
		{"netmask", "POST", "/nodes/{node}/network", "netmask", "255.255.255.0", ""},
		{"netmask bad", "POST", "/nodes/{node}/network", "netmask", "255.0.255.0", "invalid format - value does not look like a valid IP netmask"},
		{"storage content list", "POST", "/storage", "content", "images,rootdir", ""},
		{"storage content bad", "POST", "/storage", "content", "images,movies", "invalid format - invalid content type 'movies'"},
		{"storage type enum", "POST", "/storage", "type", "dir", ""},
		{"poolid", "POST", "/pools", "poolid", "team-a", ""},
		{"userid", "POST", "/access/users", "userid", "deploy@pve", ""},
		{"userid bad", "POST", "/access/users", "userid", "deploy", "invalid format - value 'deploy' does not look like a valid user name"},
		{"userid too short", "POST", "/access/users", "userid", "@p", "invalid format - user name '@p' is too short"},
		{"userid too long", "POST", "/access/users", "userid", "a@" + string(make([]byte, 63)), "value may only be 64 characters long"},
		{"email ok", "POST", "/access/users", "email", "ops@example.com", ""},
		{"email bad", "POST", "/access/users", "email", "ops-at-example", "invalid format - value does not look like a valid email address"},
		{"lxc mp0", "POST", "/nodes/{node}/lxc", "mp0", "local-lvm:8,mp=/data", ""},
		{"lxc net0", "POST", "/nodes/{node}/lxc", "net0", "name=eth0,bridge=vmbr0,ip=dhcp", ""},
		{"lxc net0 missing name", "POST", "/nodes/{node}/lxc", "net0", "bridge=vmbr0,ip=dhcp", "invalid format - name: property is missing and it is not optional"},
		{"dns search", "PUT", "/nodes/{node}/dns", "dns1", "1.1.1.1", ""},
		{"dns bad", "PUT", "/nodes/{node}/dns", "dns1", "one.one", "invalid format - value does not look like a valid IP address"},
		{"acl path", "PUT", "/access/acl", "roles", "PVEVMAdmin,PVEAuditor", ""},
		{"token privsep", "POST", "/access/users/{userid}/token/{tokenid}", "privsep", "0", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCheck(t, mustMethod(t, tt.method, tt.path), tt.param, tt.value, tt.want)
		})
	}
}

func TestMethodParamFamilies(t *testing.T) {
	qm := mustMethod(t, "POST", "/nodes/{node}/qemu")
	ct := mustMethod(t, "POST", "/nodes/{node}/lxc")
	tests := []struct {
		m    *Method
		name string
		want bool
	}{
		{qm, "net0", true}, {qm, "net31", true}, {qm, "net32", false}, {qm, "net01", false},
		{qm, "scsi30", true}, {qm, "scsi31", false},
		{qm, "virtio15", true}, {qm, "virtio16", false},
		{qm, "sata5", true}, {qm, "sata6", false},
		{qm, "ide3", true}, {qm, "ide4", false},
		{qm, "ipconfig31", true}, {qm, "ipconfig32", false},
		{qm, "hostpci15", true}, {qm, "hostpci16", false},
		{qm, "usb4", true}, {qm, "usb5", false},
		{qm, "serial3", true}, {qm, "serial4", false},
		{qm, "parallel2", true}, {qm, "parallel3", false},
		{qm, "numa7", true}, {qm, "numa8", false},
		{qm, "unused255", true}, {qm, "unused256", false},
		{qm, "virtiofs9", true}, {qm, "virtiofs10", false},
		{qm, "memory", true}, {qm, "net", false}, {qm, "bogus0", false},
		{ct, "mp255", true}, {ct, "mp256", false}, {ct, "dev255", true},
	}
	for _, tt := range tests {
		t.Run(tt.m.Path+"/"+tt.name, func(t *testing.T) {
			if _, got := tt.m.Param(tt.name); got != tt.want {
				t.Errorf("Param(%q): got %v want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestMethodCheck(t *testing.T) {
	qm := mustMethod(t, "POST", "/nodes/{node}/qemu")
	tags := mustMethod(t, "PUT", "/access/acl")
	iface := mustMethod(t, "POST", "/nodes/{node}/network")
	download := mustMethod(t, "POST", "/nodes/{node}/storage/{storage}/download-url")
	tests := []struct {
		name   string
		m      *Method
		params url.Values
		opts   CheckOptions
		want   map[string]string
	}{
		{
			name:   "valid create",
			m:      qm,
			params: url.Values{"node": {"pve"}, "vmid": {"100"}, "name": {"web-1"}, "net0": {"virtio,bridge=vmbr0"}, "memory": {"2048"}},
		},
		{
			name:   "missing vmid, unknown and bad values",
			m:      qm,
			params: url.Values{"node": {"pve"}, "net99": {"virtio"}, "colour": {"red"}, "cores": {"x"}},
			want: map[string]string{
				"vmid":   msgMissing,
				"net99":  msgNotDefined,
				"colour": msgNotDefined,
				"cores":  "type check ('integer') failed - got 'x'",
			},
		},
		{
			name:   "ignore required",
			m:      qm,
			params: url.Values{"cores": {"2"}},
			opts:   CheckOptions{IgnoreRequired: true},
		},
		{
			name:   "repeated scalar",
			m:      qm,
			params: url.Values{"node": {"pve"}, "vmid": {"100"}, "cores": {"2", "4"}},
			want:   map[string]string{"cores": msgDuplicate},
		},
		{
			name:   "requires: an address without its netmask",
			m:      iface,
			params: url.Values{"node": {"pve"}, "iface": {"vmbr7"}, "type": {"bridge"}, "address": {"192.0.2.7"}},
			want:   map[string]string{"netmask": "missing property required by 'address'"},
		},
		{
			name:   "requires: both halves, and a required one missing too",
			m:      download,
			params: url.Values{"storage": {"local"}, "content": {"iso"}, "filename": {"a.iso"}, "checksum": {"abc"}},
			want: map[string]string{
				"node":               msgMissing,
				"url":                msgMissing,
				"checksum-algorithm": "missing property required by 'checksum'",
			},
		},
		{
			name:   "requires: each checked after the values",
			m:      iface,
			params: url.Values{"node": {"pve"}, "iface": {"vmbr7"}, "type": {"bridge"}, "address": {"192.0.2.7"}, "netmask": {"x"}, "address6": {"2001:db8::7"}},
			want: map[string]string{
				"netmask":  "invalid format - value does not look like a valid IP netmask",
				"netmask6": "missing property required by 'address6'",
			},
		},
		{
			name:   "acl",
			m:      tags,
			params: url.Values{"path": {"/vms/100"}, "roles": {"PVEVMUser"}, "users": {"deploy@pve"}, "propagate": {"1"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.m.Check(tt.params, tt.opts)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check(%v) (-want +got):\n%s", tt.params, diff)
			}
		})
	}
}

func TestArrayAndOneOf(t *testing.T) {
	arr := &Method{Method: "POST", Path: "/x", Params: map[string]*Param{
		"vms":      {Type: "array", Optional: true, Items: &Param{Type: "integer", Min: ptr(100)}},
		"protocol": {Type: "string", Optional: true},
		"delete": {Type: "array", Optional: true, TypeProperty: "protocol", OneOf: []*Param{
			{Type: "array", InstanceTypes: []string{"ospf"}, Items: &Param{Type: "string", Enum: []string{"area"}}},
			{Type: "array", InstanceTypes: []string{"wireguard"}, Items: &Param{Type: "string", Enum: []string{"peers"}}},
		}},
	}}
	tests := []struct {
		name   string
		params url.Values
		want   map[string]string
	}{
		{"array repeats", url.Values{"vms": {"100", "101"}}, nil},
		{"array item bad", url.Values{"vms": {"100", "5"}}, map[string]string{"vms": "value must have a minimum value of 100"}},
		{"oneOf by type property", url.Values{"protocol": {"ospf"}, "delete": {"area"}}, nil},
		{"oneOf wrong variant", url.Values{"protocol": {"ospf"}, "delete": {"peers"}}, map[string]string{"delete": "value 'peers' does not have a value in the enumeration 'area'"}},
		{"oneOf any variant", url.Values{"delete": {"peers"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, arr.Check(tt.params, CheckOptions{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTranslatePattern(t *testing.T) {
	tests := []struct {
		in, value string
		want      bool
	}{
		{`(?^:\d+(?:;\d+)*)`, "1;2", true},
		{`(?^i:[a-z0-9_][a-z0-9_\-\+\.]*)`, "ABC", true},
		{`[A-Za-z0-9\-_\s]{,8}`, "abc", true},
		{`[A-Za-z0-9\-_\s]{,8}`, "abcdefghij", false},
		{`(?^:(?:\w+=[^\x00-\x08\x10-\x1F\x7F]*)(?:\0\w+=[^\x00-\x08\x10-\x1F\x7F]*)*)`, "a=b\x00c=d", true},
		{`(ide|sata|scsi|virtio)\d+`, "scsi0x", false},
		{`[0-9a-zA-Z!=]{0,4096}`, "abc=", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			re := compilePattern(tt.in)
			if re == nil {
				t.Fatalf("compilePattern(%q) = nil (translated %q)", tt.in, translatePattern(tt.in))
			}
			if got := re.MatchString(tt.value); got != tt.want {
				t.Errorf("match %q: got %v want %v", tt.value, got, tt.want)
			}
		})
	}
}

// TestAllPatternsCompile keeps an eye on patterns we would silently skip.
func TestAllPatternsCompile(t *testing.T) {
	var walk func(name string, p *Param)
	walk = func(name string, p *Param) {
		if p.Pattern != "" && compilePattern(p.Pattern) == nil {
			t.Errorf("%s: pattern %q does not compile as RE2 (translated %q)", name, p.Pattern, translatePattern(p.Pattern))
		}
		for k, s := range p.Props {
			walk(name+"."+k, s)
		}
		if p.Items != nil {
			walk(name+"[]", p.Items)
		}
		for _, v := range p.OneOf {
			walk(name+"|", v)
		}
	}
	for key, m := range Default().Methods {
		for name, p := range m.Params {
			walk(key+" "+name, p)
		}
	}
}

// A property string's sub-key that requires another one (cluster
// options' crs) is refused without it, as PVE's check_object refuses it.
func TestPropertyStringRequires(t *testing.T) {
	m := mustMethod(t, "PUT", "/cluster/options")
	wantCheck(t, m, "crs", "ha-auto-rebalance-margin=10", "invalid format - ha-auto-rebalance: missing property required by 'ha-auto-rebalance-margin'")
	wantCheck(t, m, "crs", "ha-auto-rebalance=1,ha-auto-rebalance-margin=10", "")
}
