package pve

import "testing"

func TestGuestLiveRule(t *testing.T) {
	for _, c := range []struct {
		typ      GuestType
		key, sub string
		want     LiveChange
		feature  string
	}{
		{QEMU, "name", "", LiveNow, ""},
		{QEMU, "tags", "", LiveNow, ""},
		{QEMU, "ipconfig3", "", LiveNow, ""},
		{QEMU, "sshkeys", "", LiveNow, ""},
		{QEMU, "memory", "", LiveHotplug, "memory"},
		{QEMU, "vcpus", "", LiveHotplug, "cpu"},
		{QEMU, "cores", "", LivePending, ""},
		{QEMU, "machine", "", LivePending, ""},
		{QEMU, "net0", "", LiveHotplug, "network"},
		{QEMU, "net0", "tag", LiveNow, ""},
		{QEMU, "net0", "bridge", LiveNow, ""},
		{QEMU, "net0", "model", LiveHotplug, "network"},
		{QEMU, "scsi1", "", LiveHotplug, "disk"},
		{QEMU, "scsi1", "iops_rd", LiveNow, ""},
		{QEMU, "scsi1", "mbps_wr_max", LiveNow, ""},
		{QEMU, "scsi1", "iops_max_length", LiveNow, ""},
		{QEMU, "virtio0", "cache", LivePending, ""},
		{QEMU, "efidisk0", "", LivePending, ""},
		{QEMU, "usb0", "", LiveHotplug, "usb"},
		{QEMU, "cpuunits", "", LiveNow, ""},
		{QEMU, "agent", "", LivePending, ""},
		{QEMU, "agent", "fstrim_cloned_disks", LiveNow, ""},
		{LXC, "hostname", "", LiveNow, ""},
		{LXC, "cores", "", LiveNow, ""},
		{LXC, "memory", "", LiveNow, ""},
		{LXC, "net1", "", LiveNow, ""},
		{LXC, "mp0", "", LiveNewOnly, ""},
		{LXC, "nameserver", "", LivePending, ""},
		{LXC, "rootfs", "", LivePending, ""},
	} {
		r := GuestLiveRule(c.typ, c.key, c.sub)
		if r.When != c.want || r.Feature != c.feature || r.Source == "" {
			t.Errorf("%s %s.%s: got %+v, want %v %q with a source", c.typ, c.key, c.sub, r, c.want, c.feature)
		}
	}
}
