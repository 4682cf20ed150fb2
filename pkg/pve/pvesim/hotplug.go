package pvesim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// What a running guest takes at once and what waits in [PENDING] for its
// next start: qemu-server QemuServer.pm vmconfig_hotplug_pending (with
// vmconfig_update_net, vmconfig_update_disk, vmconfig_update_agent) and
// pve-container LXC/Config.pm vmconfig_hotplug_pending.

var (
	// fastPlug is qemu-server's $fast_plug_option: options a running VM
	// takes into its config at once, whatever the call changed.
	fastPlug = setOf("description", "hookscript", "lock", "migrate_downtime", "migrate_speed", "name",
		"onboot", "protection", "shares", "startup", "tags", "vmstatestorage")
	// cloudinitOpts are qemu-server's $confdesc_cloudinit (with ipconfigN):
	// fast-plugged too, the drive only needs regenerating.
	cloudinitOpts = setOf("citype", "ciuser", "cipassword", "ciupgrade", "cicustom", "searchdomain", "nameserver", "sshkeys")

	ipconfigRe = lazyre.New(`^ipconfig\d+$`)
	usbKeyRe   = lazyre.New(`^usb\d+$`)
	machineRe  = lazyre.New(`^(?:pc|pc-i440fx|pc-q35|q35)-(\d+)\.(\d+)`)
	// coldDriveRe: drives vmconfig_hotplug_pending never unplugs.
	coldDriveRe = lazyre.New(`(efidisk|ide|sata|tpmstate)\d+`)

	// lxcFastPlug is pve-container's $LXC_FASTPLUG_OPTIONS.
	lxcFastPlug = setOf("description", "onboot", "startup", "protection", "hostname", "hookscript", "cores", "tags", "lock")
)

// staticMemory is qemu-server Memory.pm's $STATICMEM (MiB).
const staticMemory = 1024

func isCloudinitOpt(key string) bool { return cloudinitOpts[key] || ipconfigRe.MatchString(key) }

func isFastPlug(key string) bool { return fastPlug[key] || isCloudinitOpt(key) }

// hotplugFeatures is parse_hotplug_features: "1" or unset is the default
// network,disk,usb; "0" is none.
func hotplugFeatures(conf map[string]string) map[string]bool {
	hp, ok := conf["hotplug"]
	if !ok || hp == "1" {
		hp = "network,disk,usb"
	}
	if hp == "0" {
		return map[string]bool{}
	}
	return setOf(schema.SplitList(hp)...)
}

// usbHotplug is $is_usb_hotplug_supported: the usb feature, a machine of
// version 7.1 or later (the simulator runs QEMU 9.2) and ostype l26 or a
// Windows after 7.
func usbHotplug(conf map[string]string, f map[string]bool) bool {
	if !f["usb"] {
		return false
	}
	if m := machineRe.FindStringSubmatch(conf["machine"]); m != nil {
		major, _ := strconv.Atoi(m[1])
		minor, _ := strconv.Atoi(m[2])
		if major < 7 || major == 7 && minor < 1 {
			return false
		}
	}
	os := conf["ostype"]
	return os == "l26" || windowsVersion(os) > 7
}

// bootDisks is get_bootdisks: the drives of the boot order (the legacy
// bootdisk without one).
func bootDisks(conf map[string]string) []string {
	if order, ok := schema.PropValue(props(conf["boot"]), "order"); ok {
		return slices.DeleteFunc(schema.SplitList(order), func(d string) bool { return !qemuDriveRe.MatchString(d) })
	}
	if d := conf["bootdisk"]; d != "" {
		return []string{d}
	}
	return nil
}

// unplug is vm_deviceunplug's refusal of a boot disk.
func unplug(conf map[string]string, key string) error {
	if slices.Contains(bootDisks(conf), key) {
		return fmt.Errorf("can't unplug bootdisk '%s'", key)
	}
	return nil
}

// hotplugQemu is vmconfig_hotplug_pending for the keys the call changed
// (sel). Fast-plug options move into the config whatever the call; the
// rest moves when the hot-plug features allow it and stays pending
// otherwise. A hot-plug that fails is the call's parameter error.
func (s *Server) hotplugQemu(v *vm, sel map[string]bool) error {
	for _, key := range slices.Sorted(maps.Keys(v.Pending)) {
		if isFastPlug(key) {
			val := v.Pending[key]
			recordCloudinit(v, key, v.Conf, &val)
			v.dropPending(key)
			s.setKey(v, key, val)
		}
	}
	f := hotplugFeatures(v.Conf)
	errs := map[string]string{}
	for _, key := range v.pendingDeleteKeys() {
		if !sel[key] {
			continue
		}
		ok, err := qemuHotDelete(v.Conf, key, f)
		if err != nil {
			errs[key] = "hotplug problem - " + err.Error()
			continue
		}
		if !ok {
			continue
		}
		_, force := v.pendingDelete(key)
		recordCloudinit(v, key, v.Conf, nil)
		old, had := v.Conf[key]
		delete(v.Conf, key)
		v.removePendingDelete(key)
		if had && qemuDriveRe.MatchString(key) {
			s.deleteOrDetach(v, old, force)
		}
	}
	ciKey := ""
	for _, key := range slices.Sorted(maps.Keys(v.Pending)) {
		if !sel[key] {
			continue
		}
		val := v.Pending[key]
		if qemuDriveRe.MatchString(key) && key != "efidisk0" && key != "tpmstate0" && isCloudinitDrive(val) {
			ciKey = key // generated after the other changes
			continue
		}
		ok, err := qemuHotSet(v.Conf, key, val, f)
		if err != nil {
			errs[key] = "hotplug problem - " + err.Error()
			continue
		}
		if !ok {
			continue
		}
		recordCloudinit(v, key, v.Conf, &val)
		v.dropPending(key)
		s.setKey(v, key, val)
	}
	if ciKey != "" {
		if ok, err := hotDisk(v.Conf, ciKey, v.Pending[ciKey], f["disk"]); err != nil {
			errs[ciKey] = "hotplug problem - " + err.Error()
		} else if ok {
			val := v.Pending[ciKey]
			v.dropPending(ciKey)
			s.setKey(v, ciKey, val)
			v.CloudInit = nil // apply_cloudinit_config regenerated the image
		}
	}
	if f["cloudinit"] && isCloudinitVM(v) {
		v.CloudInit = nil // vmconfig_update_cloudinit_drive
	}
	if len(errs) > 0 {
		return paramErr(errs)
	}
	return nil
}

// hotUSBOrCPU is what the delete and the set loop of
// vmconfig_hotplug_pending do alike: tablet and usbN go with usb
// hot-plug, vcpus with cpu hot-plug. ok is false for any other key.
func hotUSBOrCPU(conf map[string]string, key string, f map[string]bool) (hot, ok bool) {
	switch {
	case key == "tablet":
		return f["usb"], true
	case usbKeyRe.MatchString(key):
		return usbHotplug(conf, f), true
	case key == "vcpus":
		return f["cpu"], true
	}
	return false, false
}

// qemuHotDelete reports whether a running VM drops key at once.
func qemuHotDelete(conf map[string]string, key string, f map[string]bool) (bool, error) {
	if hot, ok := hotUSBOrCPU(conf, key, f); ok {
		return hot, nil
	}
	switch {
	case key == "hotplug":
		hp := conf["hotplug"]
		return !strings.Contains(hp, "cpu") && !strings.Contains(hp, "memory"), nil
	case key == "balloon":
		return conf["balloon"] != "0", nil // enabling the balloon device is not hot-pluggable
	case isFastPlug(key):
		return true, nil
	case isNetKey(key):
		return f["network"], nil
	case qemuDriveRe.MatchString(key):
		if !f["disk"] || coldDriveRe.MatchString(key) {
			return false, nil
		}
		return true, unplug(conf, key)
	case key == "memory":
		return f["memory"], nil
	case key == "cpuunits", key == "cpulimit":
		return true, nil
	}
	return false, nil
}

// qemuHotSet reports whether a running VM takes key=val at once.
func qemuHotSet(conf map[string]string, key, val string, f map[string]bool) (bool, error) {
	if hot, ok := hotUSBOrCPU(conf, key, f); ok {
		return hot, nil
	}
	switch {
	case key == "hotplug":
		hp := conf["hotplug"]
		for _, feat := range []string{"memory", "cpu"} {
			if strings.Contains(val, feat) || strings.Contains(hp, feat) {
				return false, nil
			}
		}
		return true, nil
	case key == "balloon":
		// Turning the balloon device on or off is not hot-pluggable.
		_, had := conf["balloon"]
		return (!had || conf["balloon"] != "0") == (val != "0"), nil
	case isNetKey(key):
		return hotNet(conf, key, val, f["network"]), nil
	case qemuDriveRe.MatchString(key):
		if key == "efidisk0" || key == "tpmstate0" {
			return false, nil
		}
		return hotDisk(conf, key, val, f["disk"])
	case key == "memory":
		// qemu-server Memory.pm qemu_memory_hotplug: DIMMs above the
		// static 1 GiB.
		if cur := vmMaxMem(map[string]string{"memory": val}) / mib; f["memory"] && cur < staticMemory {
			return false, fmt.Errorf("memory can't be lower than %d MB", staticMemory)
		}
		return f["memory"], nil
	case key == "cpuunits", key == "cpulimit":
		return true, nil
	case key == "agent":
		return hotAgent(conf, val), nil
	}
	return false, nil
}

// hotNet is vmconfig_update_net: a new model, MAC, queue count or MTU
// (or a NIC without a bridge) needs network hot-plug; bridge, tag,
// trunks, firewall, rate and link_down change in place.
func hotNet(conf map[string]string, key, val string, hot bool) bool {
	old, had := conf[key]
	if !had {
		return hot
	}
	o, err1 := schema.ParsePropertyString(old, qemuNet())
	n, err2 := schema.ParsePropertyString(val, qemuNet())
	if err1 != nil || err2 != nil {
		return false
	}
	for _, sub := range []string{"model", "macaddr", "queues", "mtu"} {
		a, _ := schema.PropValue(o, sub)
		b, _ := schema.PropValue(n, sub)
		if a != b {
			return hot
		}
	}
	ob, _ := schema.PropValue(o, "bridge")
	nb, _ := schema.PropValue(n, "bridge")
	if ob == "" || nb == "" {
		return hot
	}
	return true
}

// driveColdOpts are the drive options vmconfig_update_disk cannot change
// on a running VM.
var driveColdOpts = []string{"aio", "discard", "iothread", "queues", "product", "cache", "ssd", "vendor", "ro"}

// hotDisk is vmconfig_update_disk: a CD-ROM changes its medium, a disk
// its throttling and size in place; another volume needs disk hot-plug,
// and a new drive too, except on IDE and SATA.
func hotDisk(conf map[string]string, key, val string, hot bool) (bool, error) {
	newFile, newOpts := diskFile(val)
	if old, had := conf[key]; had {
		oldFile, oldOpts := diskFile(old)
		media, _ := schema.PropValue(newOpts, "media")
		oldMedia, _ := schema.PropValue(oldOpts, "media")
		if orDefault(media, "disk") != orDefault(oldMedia, "disk") {
			return false, fmt.Errorf("unable to change media type")
		}
		if oldMedia == "cdrom" {
			return true, nil // change_medium
		}
		if newFile == oldFile {
			for _, opt := range driveColdOpts {
				a, _ := schema.PropValue(oldOpts, opt)
				b, _ := schema.PropValue(newOpts, opt)
				if a != b {
					return false, nil
				}
			}
			return true, nil
		}
		if !hot {
			return false, nil
		}
		if err := unplug(conf, key); err != nil {
			return false, err
		}
	}
	if !hot || strings.HasPrefix(key, "ide") || strings.HasPrefix(key, "sata") {
		return false, nil
	}
	return true, nil
}

// hotAgent is vmconfig_update_agent: only fstrim_cloned_disks changes on a
// running VM, and only when an agent is configured.
func hotAgent(conf map[string]string, val string) bool {
	old, had := conf["agent"]
	if !had || old == "" {
		return false
	}
	agent := func(s string) map[string]string {
		m := map[string]string{}
		for _, kv := range props(s) {
			k := kv.Key
			if k == "" {
				k = "enabled"
			}
			if k != "fstrim_cloned_disks" {
				m[k] = kv.Value
			}
		}
		return m
	}
	return maps.Equal(agent(old), agent(val))
}

// hotplugCT is pve-container's vmconfig_hotplug_pending for the keys the
// call changed: fast-plug options, cores and CPU limits, memory and swap,
// NICs, new mount points and devices; the rest (nameserver, searchdomain,
// a changed mount point, features…) waits for the next start.
func (s *Server) hotplugCT(v *vm, sel map[string]bool) {
	for _, key := range slices.Sorted(maps.Keys(v.Pending)) {
		if sel[key] && lxcFastPlug[key] {
			val := v.Pending[key]
			v.dropPending(key)
			s.setKey(v, key, val)
		}
	}
	for _, key := range v.pendingDeleteKeys() {
		if !sel[key] {
			continue
		}
		switch {
		case lxcFastPlug[key], isUnusedKey(key), key == "swap", key == "cpulimit", key == "cpuunits", isNetKey(key):
		default:
			continue
		}
		val := v.Conf[key]
		delete(v.Conf, key)
		v.removePendingDelete(key)
		if isUnusedKey(key) {
			s.dropCTVolume(v, key, val)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(v.Pending)) {
		if !sel[key] {
			continue
		}
		val := v.Pending[key]
		_, exists := v.Conf[key]
		switch {
		case key == "cpulimit", key == "cpuunits", isNetKey(key), key == "memory", key == "swap":
		case strings.HasPrefix(key, "mp") && !exists:
			nval, err := s.allocMountPoint(v, key, val)
			if err != nil {
				continue
			}
			val = nval
		case strings.HasPrefix(key, "dev") && !exists:
		default:
			continue
		}
		v.dropPending(key)
		s.setKey(v, key, val)
	}
}
