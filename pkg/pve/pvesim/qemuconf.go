package pvesim

import (
	"crypto/sha1"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Value types of config keys that GET …/config answers as JSON numbers.
var (
	boolKeys = setOf("acpi", "allow-ksm", "autostart", "ciupgrade", "freeze", "keephugepages", "kvm",
		"localtime", "numa", "onboot", "protection", "reboot", "tablet", "tdf", "template")
	intKeys = setOf("balloon", "cores", "cpuunits", "migrate_speed", "shares", "smp", "snaptime", "sockets", "vcpus")
	numKeys = setOf("cpulimit", "migrate_downtime")

	// Options PVE applies to a running VM at once ($fast_plug_option) and the
	// cloud-init options, which only need the drive regenerated.
	fastPlug = setOf("description", "hookscript", "lock", "migrate_downtime", "migrate_speed", "name",
		"onboot", "protection", "shares", "startup", "tags", "vmstatestorage",
		"ciuser", "cipassword", "citype", "cicustom", "ciupgrade", "sshkeys", "nameserver", "searchdomain")

	// Request parameters of create/config/clone that are not config keys.
	nonConfig = setOf("node", "vmid", "digest", "delete", "revert", "skiplock", "background_delay", "force",
		"pool", "start", "storage", "unique", "archive", "live-restore", "bwlimit", "import-working-storage", "ha-managed")

	diskKeyRe = regexp.MustCompile(`^((ide|sata|scsi|virtio)\d+|efidisk0|tpmstate0|rootfs|mp\d+)$`)
	netKeyRe  = regexp.MustCompile(`^net\d+$`)
	newDiskRe = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9\-_.]*[a-zA-Z0-9]):(\d+(?:\.\d+)?)$`)
	ciDiskRe  = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9\-_.]*[a-zA-Z0-9]):cloudinit$`)
	volidRe   = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9\-_.]*[a-zA-Z0-9]):(.+)$`)
	sizeRe    = regexp.MustCompile(`^(\+)?(\d+(?:\.\d+)?)([KMGT])?$`)
)

func setOf(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func isDiskKey(k string) bool   { return diskKeyRe.MatchString(k) }
func isNetKey(k string) bool    { return netKeyRe.MatchString(k) }
func isUnusedKey(k string) bool { return strings.HasPrefix(k, "unused") }

// props splits a stored property string. Stored values passed the schema
// check when they were written, so one that does not split reads as empty.
func props(s string) []schema.KV {
	items, err := schema.SplitPropertyString(s)
	if err != nil {
		return nil
	}
	return items
}

// printProps writes a property string as PVE's print_property_string does:
// lead first (the default key, or a key-alias pair p knows), the rest
// sorted by key.
func printProps(p *schema.Param, lead, rest []schema.KV) string {
	sorted := slices.Clone(rest)
	slices.SortStableFunc(sorted, func(a, b schema.KV) int { return strings.Compare(a.Key, b.Key) })
	return schema.FormatPropertyString(append(slices.Clone(lead), sorted...), p)
}

// printDrive writes a drive back: its volume first, the options sorted.
func printDrive(file string, rest []schema.KV) string {
	var lead []schema.KV
	if file != "" {
		lead = []schema.KV{{Value: file}}
	}
	return printProps(nil, lead, rest)
}

// qemuNet is the schema of a VM's netN value (model, key aliases, MAC).
func qemuNet() *schema.Param {
	m, _ := schema.Default().Lookup("POST", "/nodes/{node}/qemu/{vmid}/config")
	p, _ := m.Param("net0")
	return p
}

// netModelMAC extracts model and MAC from a netN value; the schema resolves
// "virtio=MAC" to model=virtio,macaddr=MAC.
func netModelMAC(val string) (model, mac string) {
	items, err := schema.ParsePropertyString(val, qemuNet())
	if err != nil {
		return "", ""
	}
	model, _ = schema.PropValue(items, "model")
	mac, _ = schema.PropValue(items, "macaddr")
	return model, strings.ToUpper(mac)
}

// normalizeNet writes a NIC back as PVE does: "virtio=BC:24:11:…,bridge=vmbr0".
func (s *Server) normalizeNet(key, val string, newMAC bool) (string, error) {
	net := qemuNet()
	items, err := schema.ParsePropertyString(val, net)
	if err != nil {
		return "", paramErr1(key, "invalid format - %v", err)
	}
	model, _ := schema.PropValue(items, "model")
	if model == "" {
		return "", paramErr1(key, "invalid format - missing network card model")
	}
	mac, _ := schema.PropValue(items, "macaddr")
	if mac == "" || newMAC {
		mac = s.newMAC()
	}
	rest := schema.DeleteProp(schema.DeleteProp(items, "model"), "macaddr")
	lead := []schema.KV{{Key: "model", Value: model}, {Key: "macaddr", Value: strings.ToUpper(mac)}}
	return printProps(net, lead, rest), nil
}

func parseSize(s string) (int64, bool, error) {
	m := sizeRe.FindStringSubmatch(s)
	if m == nil {
		return 0, false, fmt.Errorf("unable to parse size '%s'", s)
	}
	f, _ := strconv.ParseFloat(m[2], 64)
	mult := map[string]float64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m[3]]
	return int64(f * mult), m[1] == "+", nil
}

func formatSize(b int64) string {
	for _, u := range []struct {
		n int64
		s string
	}{{1 << 40, "T"}, {1 << 30, "G"}, {1 << 20, "M"}, {1 << 10, "K"}} {
		if b >= u.n && b%u.n == 0 {
			return strconv.FormatInt(b/u.n, 10) + u.s
		}
	}
	return strconv.FormatInt(b, 10)
}

// diskFile returns the volume (first item) of a drive value.
func diskFile(val string) (string, []schema.KV) {
	items := props(val)
	var file string
	var rest []schema.KV
	for _, it := range items {
		switch {
		case it.Key == "" && file == "":
			file = it.Value
		case it.Key == "file" || it.Key == "volume":
			file = it.Value
		default:
			rest = append(rest, it)
		}
	}
	return file, rest
}

// normalizeDisk allocates new volumes for "STOR:SIZE", "STOR:0,import-from=…"
// and "STOR:cloudinit" and writes the drive back as PVE stores it. The
// volumes it creates are appended to *created so a failed request can undo them.
func (s *Server) normalizeDisk(v *vm, key, val string, created *[]*volume) (string, error) {
	file, rest := diskFile(val)
	if file == "" {
		return "", paramErr1(key, "invalid format - missing volume")
	}
	if m := newDiskRe.FindStringSubmatch(file); m != nil {
		st, err := s.imageStorage(m[1], v.Node, key)
		if err != nil {
			return "", err
		}
		gbs, _ := strconv.ParseFloat(m[2], 64)
		size := int64(gbs * float64(gib))
		if src, ok := schema.PropValue(rest, "import-from"); ok {
			if gbs != 0 {
				return "", paramErr1(key, "'import-from' requires special syntax - use <storage ID>:0,import-from=<source>")
			}
			sv, ok := s.st.Volumes[src]
			if !ok && !strings.HasPrefix(src, "/") {
				return "", fail(500, "volume '%s' does not exist", src)
			}
			size = 2 * gib
			if ok {
				size = sv.Size
			}
			rest = schema.DeleteProp(rest, "import-from")
		}
		switch key {
		case "efidisk0":
			size = 128 << 10
			if t, _ := schema.PropValue(rest, "efitype"); t == "4m" {
				size = 4 * mib
			}
		case "tpmstate0":
			size = 4 * mib
		}
		if size <= 0 {
			return "", paramErr1(key, "invalid disk size '%s'", m[2])
		}
		vol := s.allocImage(st, v.VMID, size, "vm")
		*created = append(*created, vol)
		rest = schema.SetProp(rest, "size", formatSize(size))
		return printDrive(vol.volid(), rest), nil
	}
	if m := ciDiskRe.FindStringSubmatch(file); m != nil {
		st, err := s.imageStorage(m[1], v.Node, key)
		if err != nil {
			return "", err
		}
		name := fmt.Sprintf("vm-%d-cloudinit", v.VMID)
		format := "raw"
		if isFileStorage(st) {
			name, format = fmt.Sprintf("%d/vm-%d-cloudinit.qcow2", v.VMID, v.VMID), "qcow2"
		}
		vol := &volume{Storage: st.ID, Name: name, Content: "images", Format: format, Size: 4 * mib, VMID: v.VMID}
		if _, exists := s.st.Volumes[vol.volid()]; !exists {
			s.st.addVolume(vol)
			*created = append(*created, vol)
		}
		rest = schema.SetProp(rest, "media", "cdrom")
		return printDrive(vol.volid(), rest), nil
	}
	if m := volidRe.FindStringSubmatch(file); m != nil {
		if _, known := s.st.Storages[m[1]]; !known {
			return "", fail(500, "storage '%s' does not exist", m[1])
		}
		vol, ok := s.st.Volumes[file]
		if !ok {
			return "", fail(500, "volume '%s' does not exist", file)
		}
		if vol.Content == "iso" {
			rest = schema.SetProp(rest, "media", "cdrom")
		}
	}
	return printDrive(file, rest), nil
}

// normalizeValue applies PVE's write-backs for one key.
func (s *Server) normalizeValue(v *vm, key, val string, created *[]*volume) (string, error) {
	if v.Type == "lxc" {
		return s.normalizeCTValue(v, key, val, created)
	}
	switch {
	case isNetKey(key):
		return s.normalizeNet(key, val, false)
	case isDiskKey(key):
		return s.normalizeDisk(v, key, val, created)
	case key == "tags":
		return normalizeTags(val), nil
	case key == "description":
		return normalizeDescription(val), nil
	}
	return val, nil
}

// normalizeTags is PVE's get_unique_tags with the default tag-style:
// duplicates dropped and sorted, both ignoring case.
func normalizeTags(val string) string {
	seen := map[string]bool{}
	var tags []string
	for _, t := range schema.SplitList(val) {
		if !seen[strings.ToLower(t)] {
			seen[strings.ToLower(t)] = true
			tags = append(tags, t)
		}
	}
	sort.SliceStable(tags, func(i, j int) bool { return strings.ToLower(tags[i]) < strings.ToLower(tags[j]) })
	return strings.Join(tags, ";")
}

// normalizeDescription mirrors the config-comment round trip: every line
// comes back with a newline, trailing empty lines are lost.
func normalizeDescription(val string) string {
	val = strings.TrimRight(val, "\n")
	if val == "" {
		return ""
	}
	return val + "\n"
}

// hotpluggable reports whether a change to key on a running VM applies at
// once (true) or waits in the pending section for the next start.
func hotpluggable(v *vm, key string) bool {
	if v.Type == "lxc" {
		return hotplugCT(key)
	}
	conf := v.Conf
	if fastPlug[key] || strings.HasPrefix(key, "ipconfig") {
		return true
	}
	hp, ok := conf["hotplug"]
	if !ok || hp == "1" {
		hp = "network,disk,usb"
	}
	features := setOf(schema.SplitList(hp)...)
	switch {
	case isNetKey(key):
		return features["network"]
	case isDiskKey(key) && key != "efidisk0" && key != "tpmstate0", isUnusedKey(key):
		return features["disk"]
	case strings.HasPrefix(key, "usb"):
		return features["usb"]
	case key == "memory":
		return features["memory"]
	case key == "vcpus":
		return features["cpu"]
	}
	return false
}

// setKey installs a value, turning a replaced volume into an unused disk.
func (s *Server) setKey(v *vm, key, val string) {
	if old, ok := v.Conf[key]; ok && isDiskKey(key) {
		oldFile, _ := diskFile(old)
		newFile, _ := diskFile(val)
		if oldFile != newFile {
			s.detachVolume(v, oldFile)
		}
	}
	if val == "" && (key == "description" || key == "tags") {
		delete(v.Conf, key)
		return
	}
	v.Conf[key] = val
}

// removeKey deletes a key as PVE does: an image becomes unusedN, a
// cloud-init drive is freed, deleting unusedN destroys the volume.
func (s *Server) removeKey(v *vm, key string) {
	old, ok := v.Conf[key]
	if !ok {
		return
	}
	delete(v.Conf, key)
	file, _ := diskFile(old)
	switch {
	case isUnusedKey(key):
		delete(s.st.Volumes, file)
	case isDiskKey(key):
		s.detachVolume(v, file)
	}
}

func (s *Server) detachVolume(v *vm, volid string) {
	vol, ok := s.st.Volumes[volid]
	if !ok || (vol.Content != "images" && vol.Content != "rootdir") || vol.VMID != v.VMID {
		return
	}
	if strings.Contains(vol.Name, "cloudinit") {
		delete(s.st.Volumes, volid)
		return
	}
	for i := 0; ; i++ {
		k := fmt.Sprintf("unused%d", i)
		if _, used := v.Conf[k]; !used {
			v.Conf[k] = volid
			return
		}
	}
}

// applyPending moves pending changes into the config (at VM start).
func (s *Server) applyPending(v *vm) {
	for _, k := range v.PendingDel {
		s.removeKey(v, k)
	}
	for _, k := range slices.Sorted(maps.Keys(v.Pending)) {
		s.setKey(v, k, v.Pending[k])
	}
	v.Pending, v.PendingDel = nil, nil
}

// renderConf is the config file text; its SHA-1 is the digest.
func renderConf(v *vm) string {
	var b strings.Builder
	if d := v.Conf["description"]; d != "" {
		for _, line := range strings.Split(strings.TrimRight(d, "\n"), "\n") {
			b.WriteString("#" + line + "\n")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(v.Conf)) {
		if k != "description" {
			fmt.Fprintf(&b, "%s: %s\n", k, v.Conf[k])
		}
	}
	if len(v.Pending) > 0 || len(v.PendingDel) > 0 {
		b.WriteString("\n[PENDING]\n")
		for _, k := range slices.Sorted(maps.Keys(v.Pending)) {
			fmt.Fprintf(&b, "%s: %s\n", k, v.Pending[k])
		}
		if len(v.PendingDel) > 0 {
			fmt.Fprintf(&b, "delete: %s\n", strings.Join(v.PendingDel, ","))
		}
	}
	return b.String()
}

func digest(v *vm) string {
	return fmt.Sprintf("%x", sha1.Sum([]byte(renderConf(v))))
}

// confValue types a config value the way PVE's JSON encoder emits it.
func confValue(typ, k, v string) any {
	if typ == "lxc" {
		return confValueCT(k, v)
	}
	if boolKeys[k] || intKeys[k] {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	if numKeys[k] {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	}
	return v
}

func vmMaxMem(conf map[string]string) int64 {
	mem := int64(512)
	if m, ok := conf["memory"]; ok {
		items := props(m)
		val, _ := schema.PropValue(items, "current")
		if len(items) > 0 && items[0].Key == "" {
			val = items[0].Value
		}
		if n, err := strconv.ParseInt(val, 10, 64); err == nil {
			mem = n
		}
	}
	return mem * mib
}

func vmCPUs(conf map[string]string) int {
	cores, sockets := 1, 1
	if n, err := strconv.Atoi(conf["cores"]); err == nil {
		cores = n
	}
	if n, err := strconv.Atoi(conf["sockets"]); err == nil {
		sockets = n
	}
	if n, err := strconv.Atoi(conf["vcpus"]); err == nil && n > 0 {
		return n
	}
	return cores * sockets
}

// vmMaxDisk is the size of the boot disk (first disk in boot order or scsi0…).
func vmMaxDisk(conf map[string]string) int64 {
	var keys []string
	if b, ok := conf["boot"]; ok {
		if order, ok := schema.PropValue(props(b), "order"); ok {
			keys = strings.Split(order, ";")
		}
	}
	keys = append(keys, "scsi0", "virtio0", "sata0", "ide0", "rootfs")
	for _, k := range keys {
		val, ok := conf[k]
		if !ok || !isDiskKey(k) {
			continue
		}
		_, rest := diskFile(val)
		if m, _ := schema.PropValue(rest, "media"); m == "cdrom" {
			continue
		}
		if sz, ok := schema.PropValue(rest, "size"); ok {
			if n, _, err := parseSize(sz); err == nil {
				return n
			}
		}
	}
	return 0
}
