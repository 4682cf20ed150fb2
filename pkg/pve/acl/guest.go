package acl

import (
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// Option is what setting or deleting one guest config option needs.
type Option struct {
	// Privs are needed on the guest (/vms/N, or its pool's path): all of
	// them, or one when Any.
	Privs []string
	Any   bool
	// Root lists privileges needed on / as well (startup: Sys.Modify).
	Root []string
	// ByValue: the need depends on the value (drives, devices, tags,
	// container mount points and features), checked apart.
	ByValue bool
	// RootOnly: only root@pam may set it; no API token can, whatever its
	// privileges.
	RootOnly bool
}

// qemuOptions are qemu-server API2/Qemu.pm's option categories ($cpuoptions,
// $memoryoptions, $hwtypeoptions, $generaloptions, $vmpoweroptions,
// $diskoptions, $cloudinitoptions) with their privilege.
var qemuOptions = func() map[string]Option {
	m := map[string]Option{}
	add := func(o Option, keys ...string) {
		for _, k := range keys {
			m[k] = o
		}
	}
	one := func(p string) Option { return Option{Privs: []string{p}} }
	add(one("VM.Config.CPU"), "cores", "cpu", "runningcpu", "cpulimit", "cpuunits", "numa", "smp", "sockets", "vcpus")
	add(one("VM.Config.Memory"), "memory", "balloon", "shares", "allow-ksm")
	add(one("VM.Config.HWType"), "acpi", "hotplug", "kvm", "machine", "runningmachine", "scsihw", "smbios1",
		"tablet", "vga", "watchdog", "audio0")
	add(one("VM.Config.Options"), "agent", "autostart", "bios", "description", "keyboard", "localtime",
		"migrate_downtime", "migrate_speed", "name", "onboot", "ostype", "protection", "reboot", "startdate", "tdf", "template")
	add(Option{Privs: []string{"VM.Config.Options"}, Root: []string{"Sys.Modify"}}, "startup")
	add(one("VM.PowerMgmt"), "freeze")
	add(one("VM.Config.Disk"), "boot", "bootdisk", "vmstatestorage")
	add(Option{Privs: []string{"VM.Config.Cloudinit", "VM.Config.Network"}, Any: true},
		"cicustom", "cipassword", "citype", "ciuser", "ciupgrade", "nameserver", "searchdomain", "sshkeys")
	add(one("VM.Config.Network"), "running-nets-host-mtu")
	add(Option{Privs: []string{"VM.Config.Disk", "VM.PowerMgmt"}}, "vmstate")
	add(Option{Privs: []string{"VM.Config.HWType"}, ByValue: true}, "rng0")
	add(Option{ByValue: true}, "cdrom", "tags")
	return m
}()

var (
	// qemuDriveRe is is_valid_drivename (qemu-server QemuServer/Drive.pm).
	qemuDriveRe = lazyre.New(`^(ide[0-3]|sata[0-5]|scsi([0-9]|[12][0-9]|30)|virtio([0-9]|1[0-5])|efidisk0|tpmstate0)$`)
	// qemuByValueRe are the QEMU keys whose check depends on the value.
	qemuByValueRe = lazyre.New(`^(unused|serial|usb|hostpci|virtiofs)\d+$`)
)

// IsQemuDrive reports whether key names a QEMU drive (is_valid_drivename).
func IsQemuDrive(key string) bool { return qemuDriveRe.MatchString(key) }

// cloudinitVolRe is qemu-server's drive_is_cloudinit on a drive's volume.
var cloudinitVolRe = lazyre.New(`[:/](vm-\d+-)?cloudinit(\.(raw|qcow2|vmdk|cloop|cow|qcow|qed|vhdx|vpc))?$`)

// IsCloudinitVolume reports whether a drive's volume is a cloud-init
// drive (drive_is_cloudinit).
func IsCloudinitVolume(file string) bool { return cloudinitVolRe.MatchString(file) }

// DrivePrivs are the privileges on the guest that changing (or deleting)
// a QEMU drive of value val needs, as update_vm_api checks the old and
// the new drive (qemu-server API2/Qemu.pm, its check_drive_perms): a
// cloud-init drive VM.Config.Cloudinit and VM.Config.CDROM, a CD-ROM
// VM.Config.CDROM, a disk VM.Config.Disk.
func DrivePrivs(val string) []string {
	file, cdrom := "", false
	for i, item := range strings.Split(val, ",") {
		k, v, named := strings.Cut(item, "=")
		switch {
		case !named && i == 0:
			file = item
		case k == "file" || k == "volume":
			file = v
		case k == "media":
			cdrom = v == "cdrom"
		}
	}
	switch {
	case IsCloudinitVolume(file):
		return []string{"VM.Config.Cloudinit", "VM.Config.CDROM"}
	case cdrom:
		return []string{"VM.Config.CDROM"}
	}
	return []string{"VM.Config.Disk"}
}

// QemuOption is what a QEMU option needs (check_vm_modify_config_perm):
// its category's privilege; drives and devices by value; an option of no
// category is root@pam's alone.
func QemuOption(key string) Option {
	if o, ok := qemuOptions[key]; ok {
		return o
	}
	switch {
	case IsQemuDrive(key), qemuByValueRe.MatchString(key):
		return Option{ByValue: true}
	case strings.HasPrefix(key, "numa"):
		return Option{Privs: []string{"VM.Config.CPU"}}
	case strings.HasPrefix(key, "net"):
		return Option{Privs: []string{"VM.Config.Network"}, ByValue: true} // and its bridge
	case strings.HasPrefix(key, "ipconfig"):
		return qemuOptions["ciuser"]
	}
	return Option{RootOnly: true}
}

// CTOption is what a container option needs (pve-container LXC.pm
// check_ct_modify_config_perm).
func CTOption(key string) Option {
	one := func(p string) Option { return Option{Privs: []string{p}} }
	switch {
	case key == "cores" || key == "cpuunits" || key == "cpulimit":
		return one("VM.Config.CPU")
	case key == "rootfs" || isIndexed(key, "mp"):
		return Option{Privs: []string{"VM.Config.Disk"}, ByValue: true}
	case key == "memory" || key == "swap":
		return one("VM.Config.Memory")
	case isIndexed(key, "net"):
		return Option{Privs: []string{"VM.Config.Network"}, ByValue: true}
	case isIndexed(key, "dev") || key == "hookscript":
		return Option{RootOnly: true}
	case key == "nameserver" || key == "searchdomain" || key == "hostname":
		return one("VM.Config.Network")
	case key == "features":
		return Option{ByValue: true}
	}
	return one("VM.Config.Options")
}

func isIndexed(key, prefix string) bool {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok || rest == "" {
		return false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
