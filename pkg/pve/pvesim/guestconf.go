package pvesim

import (
	"crypto/sha1"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

var (
	diskKeyRe = lazyre.New(`^((ide|sata|scsi|virtio)\d+|efidisk0|tpmstate0|rootfs|mp\d+)$`)
	netKeyRe  = lazyre.New(`^net\d+$`)
	newDiskRe = lazyre.New(`^([a-zA-Z][a-zA-Z0-9\-_.]*[a-zA-Z0-9]):(\d+(?:\.\d+)?)$`)
	ciDiskRe  = lazyre.New(`^([a-zA-Z][a-zA-Z0-9\-_.]*[a-zA-Z0-9]):cloudinit$`)
	volidRe   = lazyre.New(`^([a-zA-Z][a-zA-Z0-9\-_.]*[a-zA-Z0-9]):(.+)$`)
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

// printDrive writes a drive back: its volume first, then the required
// keys, then the options sorted (pve-common JSONSchema.pm
// print_property_string: default key, required keys, the rest). Of the
// drive and mount point formats only a container mount point has a
// required key besides its volume: "mp".
func printDrive(file string, rest []schema.KV) string {
	var lead []schema.KV
	if file != "" {
		lead = []schema.KV{{Value: file}}
	}
	if mp, ok := schema.PropValue(rest, "mp"); ok {
		lead = append(lead, schema.KV{Key: "mp", Value: mp})
		rest = schema.DeleteProp(rest, "mp")
	}
	return printProps(nil, lead, rest)
}

// parseBools reads the boolean sub-keys of a property string as
// parse_property_string does (pve-common JSONSchema.pm: parse_boolean
// turns 1/on/yes/true into 1 and 0/off/no/false into 0, any case), so
// the value printed back says 1 or 0. p is the option's schema.
func parseBools(p *schema.Param, items []schema.KV) []schema.KV {
	if p == nil {
		return items
	}
	subs := p.SubKeys()
	out := slices.Clone(items)
	for i, it := range out {
		if sub := subs[it.Key]; sub != nil && sub.Type == "boolean" {
			switch strings.ToLower(it.Value) {
			case "1", "on", "yes", "true":
				out[i].Value = "1"
			case "0", "off", "no", "false":
				out[i].Value = "0"
			}
		}
	}
	return out
}

// parseSize reads a resize's size: PVE's disk size with an optional "+"
// for "grow by" (qemu-server src/PVE/API2/Qemu.pm resize_vm).
func parseSize(s string) (int64, bool, error) {
	rest, plus := strings.CutPrefix(s, "+")
	n, ok := schema.ParseSize(rest)
	if !ok {
		return 0, false, fmt.Errorf("unable to parse size '%s'", s)
	}
	return n, plus, nil
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

// ctDescription mirrors a container's config-comment round trip: every
// line comes back with a newline, trailing empty lines are lost
// (pve-container LXC/Config.pm write_pct_config, parse_pct_config).
func ctDescription(val string) string {
	val = strings.TrimRight(val, "\n")
	if val == "" {
		return ""
	}
	return val + "\n"
}

// qemuDescription mirrors a VM's: parse_vm_config strips trailing
// whitespace, newlines included (qemu-server QemuServer.pm).
func qemuDescription(val string) string { return strings.TrimRight(val, " \t\n\r\f\v") }

// setKey installs a value; a volume the config no longer uses becomes an
// unused disk.
func (s *Server) setKey(v *vm, key, val string) {
	old, had := v.Conf[key]
	if val == "" && (key == "description" || key == "tags") {
		delete(v.Conf, key)
	} else {
		v.Conf[key] = val
	}
	if had && isDiskKey(key) {
		oldFile, _ := diskFile(old)
		if newFile, _ := diskFile(val); oldFile != newFile {
			s.detachVolume(v, oldFile)
		}
	}
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

// detachVolume registers a volume the guest no longer uses as unusedN, or
// frees it when it is its cloud-init drive. A volume the config or its
// pending section still names stays as it is (qemu-server write_vm_config
// drops unusedN entries of used volumes).
func (s *Server) detachVolume(v *vm, volid string) {
	vol, ok := s.st.Volumes[volid]
	if !ok || (vol.Content != "images" && vol.Content != "rootdir") || vol.VMID != v.VMID {
		return
	}
	for _, conf := range []map[string]string{v.Conf, v.Pending} {
		for k, val := range conf {
			if f, _ := diskFile(val); f == volid && (isDiskKey(k) || isUnusedKey(k)) {
				return
			}
		}
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
	b.WriteString(renderSnapshots(v))
	if ci := cloudinitSection(v); len(ci) > 0 {
		b.WriteString("\n[special:cloudinit]\n")
		for _, k := range slices.Sorted(maps.Keys(ci)) {
			fmt.Fprintf(&b, "%s: %s\n", k, ci[k])
		}
	}
	return b.String()
}

func digest(v *vm) string {
	return fmt.Sprintf("%x", sha1.Sum([]byte(renderConf(v))))
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
