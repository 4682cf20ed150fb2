package pve

import (
	"slices"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// LiveChange says when PVE applies a config change to a running guest.
// A change it cannot apply at once is kept in the config's pending
// section (GET …/pending) until the guest next starts.
type LiveChange int

const (
	// LiveNow changes are applied at once.
	LiveNow LiveChange = iota + 1
	// LiveHotplug changes are applied at once when the guest's `hotplug`
	// option lists the rule's Feature (default network,disk,usb), and
	// stay pending otherwise.
	LiveHotplug
	// LiveNewOnly changes add a new device at once; changing an existing
	// one stays pending.
	LiveNewOnly
	// LivePending changes stay pending until the guest restarts.
	LivePending
)

// LiveRule is PVE's rule for changing one config key (or one sub-key of a
// property string) of a running guest.
type LiveRule struct {
	When LiveChange
	// Feature is the `hotplug` feature a LiveHotplug change needs.
	Feature string
	// Note qualifies the rule where PVE looks at more than the key.
	Note string
	// Source is the PVE code that decides it.
	Source string
}

const (
	qemuHotplugSrc = "qemu-server src/PVE/QemuServer.pm (vmconfig_hotplug_pending)"
	lxcHotplugSrc  = "pve-container src/PVE/LXC/Config.pm (vmconfig_hotplug_pending)"
)

var (
	// qemuFastPlug are applied to a running VM's config at once: they do
	// not touch the running QEMU (QemuServer.pm $fast_plug_option).
	qemuFastPlug = []string{"description", "hookscript", "lock", "migrate_downtime", "migrate_speed",
		"name", "onboot", "protection", "shares", "startup", "tags", "vmstatestorage"}
	// qemuCloudInit are fast-plugged too ($confdesc_cloudinit).
	qemuCloudInit = []string{"citype", "ciuser", "cipassword", "ciupgrade", "cicustom", "searchdomain",
		"nameserver", "sshkeys"}
	// qemuNetLive are NIC sub-keys vmconfig_update_net changes on the
	// running tap device without unplugging the NIC.
	qemuNetLive = []string{"bridge", "tag", "trunks", "firewall", "rate", "link_down"}
	// qemuDiskPending are drive options vmconfig_update_disk cannot
	// change on a running VM.
	qemuDiskPending = []string{"aio", "discard", "iothread", "queues", "product", "cache", "ssd", "vendor", "ro"}
	// qemuDiskThrottle are the I/O limits vmconfig_update_disk applies
	// with set_io_throttle.
	qemuDiskThrottle = lazyre.New(`^(mbps|iops)(_rd|_wr)?(_max)?$|^(bps|iops)(_rd|_wr)?_max_length$`)

	// lxcFastPlug are applied to a running container's config at once
	// (LXC/Config.pm $LXC_FASTPLUG_OPTIONS); cores is a cgroup setting.
	lxcFastPlug = []string{"description", "onboot", "startup", "protection", "hostname", "hookscript", "cores", "tags", "lock"}
	// lxcCgroup are applied to the running container's cgroup.
	lxcCgroup = []string{"cpulimit", "cpuunits", "memory", "swap"}

	ipconfigRE = lazyre.New(`^ipconfig\d+$`)
	netRE      = lazyre.New(`^net\d+$`)
	qemuDiskRE = lazyre.New(`^(ide|sata|scsi|virtio)\d+$`)
	unusedRE   = lazyre.New(`^unused\d+$`)
	usbRE      = lazyre.New(`^usb\d+$`)
	lxcDevRE   = lazyre.New(`^(mp|dev)\d+$`)
)

// GuestLiveRule returns PVE's rule for changing key (and, when sub is not
// empty, that sub-key of its property string) on a running guest.
func GuestLiveRule(typ GuestType, key, sub string) LiveRule {
	if typ == LXC {
		return lxcLiveRule(key)
	}
	return qemuLiveRule(key, sub)
}

func qemuLiveRule(key, sub string) LiveRule {
	now := func(note string) LiveRule { return LiveRule{When: LiveNow, Note: note, Source: qemuHotplugSrc} }
	pending := func(note string) LiveRule { return LiveRule{When: LivePending, Note: note, Source: qemuHotplugSrc} }
	hot := func(feature, note string) LiveRule {
		return LiveRule{When: LiveHotplug, Feature: feature, Note: note, Source: qemuHotplugSrc}
	}
	switch {
	case slices.Contains(qemuFastPlug, key):
		return LiveRule{When: LiveNow, Source: "qemu-server src/PVE/QemuServer.pm ($fast_plug_option)"}
	case slices.Contains(qemuCloudInit, key), ipconfigRE.MatchString(key):
		return LiveRule{When: LiveNow, Source: "qemu-server src/PVE/QemuServer.pm ($fast_plug_option, $confdesc_cloudinit)",
			Note: "written to the config at once; the guest sees it when the cloud-init drive is regenerated (next start, or PUT …/cloudinit) and cloud-init runs"}
	case netRE.MatchString(key):
		src := "qemu-server src/PVE/QemuServer.pm (vmconfig_update_net)"
		if slices.Contains(qemuNetLive, sub) {
			return LiveRule{When: LiveNow, Source: src, Note: "the running NIC's tap device is re-plugged; a bridge or VLAN change also toggles the link so the guest renews its lease"}
		}
		return LiveRule{When: LiveHotplug, Feature: "network", Source: src,
			Note: "a new NIC, or a change of model, macaddr, queues or mtu, unplugs and plugs the NIC; bridge, tag, trunks, firewall, rate and link_down change without hotplug"}
	case qemuDiskRE.MatchString(key):
		src := "qemu-server src/PVE/QemuServer.pm (vmconfig_update_disk)"
		switch {
		case qemuDiskThrottle.MatchString(sub):
			return LiveRule{When: LiveNow, Source: src, Note: "I/O limits are set on the running drive"}
		case slices.Contains(qemuDiskPending, sub):
			return LiveRule{When: LivePending, Source: src}
		case sub != "" && sub != "file":
			return LiveRule{When: LiveNow, Source: src, Note: "written to the config at once, as the running drive stays"}
		case strings.HasPrefix(key, "ide") || strings.HasPrefix(key, "sata"):
			return LiveRule{When: LivePending, Source: src,
				Note: "IDE and SATA drives are not hot-plugged: a new drive or another volume waits for the next start; a CD-ROM changes its medium at once"}
		}
		return LiveRule{When: LiveHotplug, Feature: "disk", Source: src,
			Note: "a new disk or another volume is plugged; I/O limits change without hotplug, aio, cache, discard, iothread, queues, ro, ssd, product and vendor stay pending"}
	case key == "efidisk0" || key == "tpmstate0":
		return pending("")
	case unusedRE.MatchString(key):
		return hot("disk", "removing an unused volume")
	case usbRE.MatchString(key):
		return hot("usb", "and only for ostype l26 or Windows 8 and later, on QEMU 7.1 or newer")
	case key == "tablet":
		return hot("usb", "")
	case key == "memory":
		return hot("memory", "")
	case key == "vcpus":
		return hot("cpu", "")
	case key == "cpuunits" || key == "cpulimit":
		return now("set on the running VM's cgroup")
	case key == "balloon":
		return now("the balloon target is set at once; turning ballooning on or off (balloon: 0) stays pending")
	case key == "agent":
		if sub == "fstrim_cloned_disks" {
			return LiveRule{When: LiveNow, Source: "qemu-server src/PVE/QemuServer.pm (vmconfig_update_agent)"}
		}
		return LiveRule{When: LivePending, Source: "qemu-server src/PVE/QemuServer.pm (vmconfig_update_agent)",
			Note: "only fstrim_cloned_disks changes at once"}
	case key == "hotplug":
		return now("unless memory or cpu hotplug is turned on or off, which stays pending")
	}
	return pending("")
}

func lxcLiveRule(key string) LiveRule {
	switch {
	case slices.Contains(lxcFastPlug, key):
		return LiveRule{When: LiveNow, Source: "pve-container src/PVE/LXC/Config.pm ($LXC_FASTPLUG_OPTIONS)"}
	case slices.Contains(lxcCgroup, key):
		return LiveRule{When: LiveNow, Source: lxcHotplugSrc, Note: "set on the running container's cgroup"}
	case netRE.MatchString(key):
		return LiveRule{When: LiveNow, Source: "pve-container src/PVE/LXC.pm (update_net)",
			Note: "veth interfaces only; a new name or hwaddr re-creates the interface"}
	case lxcDevRE.MatchString(key):
		return LiveRule{When: LiveNewOnly, Source: lxcHotplugSrc}
	case unusedRE.MatchString(key):
		return LiveRule{When: LiveNow, Source: lxcHotplugSrc, Note: "removing an unused volume"}
	}
	return LiveRule{When: LivePending, Source: lxcHotplugSrc}
}
