package pve

import (
	"net/url"
	"testing"
)

func TestQemuConfigIsQuick(t *testing.T) {
	tests := []struct {
		name    string
		params  url.Values
		running bool
		want    bool
	}{
		{name: "stopped: memory and cores", params: url.Values{"memory": {"2048"}, "cores": {"2"}, "digest": {"d"}}, want: true},
		{name: "stopped: a NIC", params: url.Values{"net0": {"virtio,bridge=vmbr1"}}, want: true},
		{name: "stopped: delete a setting", params: url.Values{"delete": {"tags,description"}}, want: true},
		{name: "stopped: a new disk allocates", params: url.Values{"scsi1": {"local-lvm:8"}}, want: false},
		{name: "stopped: an EFI disk allocates", params: url.Values{"efidisk0": {"local-lvm:1"}}, want: false},
		{name: "stopped: delete a disk detaches it", params: url.Values{"delete": {"scsi1"}}, want: false},
		{name: "stopped: an unused volume is destroyed", params: url.Values{"delete": {"unused0"}}, want: false},
		{name: "stopped: force", params: url.Values{"delete": {"tags"}, "force": {"1"}}, want: false},
		{name: "running: fast-plugged name and tags", params: url.Values{"name": {"x"}, "tags": {"a"}}, running: true, want: true},
		{name: "running: cloud-init settings", params: url.Values{"ciuser": {"u"}, "ipconfig0": {"ip=dhcp"}}, running: true, want: true},
		{name: "running: pending cpu type", params: url.Values{"cpu": {"host"}}, running: true, want: true},
		{name: "running: memory may hotplug", params: url.Values{"memory": {"4096"}}, running: true, want: false},
		{name: "running: a NIC is hotplugged", params: url.Values{"net1": {"virtio,bridge=vmbr0"}}, running: true, want: false},
		{name: "running: cgroup setting", params: url.Values{"cpulimit": {"2"}}, running: true, want: false},
		{name: "running: balloon set on QEMU", params: url.Values{"balloon": {"512"}}, running: true, want: false},
		{name: "running: revert a hotpluggable key", params: url.Values{"revert": {"memory"}}, running: true, want: false},
		{name: "import working storage is POST's alone", params: url.Values{"import-working-storage": {"local"}}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := QemuConfigIsQuick(tt.params, tt.running); got != tt.want {
				t.Errorf("QemuConfigIsQuick(%v, running %v) = %v, want %v", tt.params, tt.running, got, tt.want)
			}
		})
	}
}
