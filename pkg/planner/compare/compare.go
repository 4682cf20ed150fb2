// Package compare decides what is drift: it compares the values a spec
// asks for with what PVE answers, using the schema facts of the kind's
// create method (defaults, formats, property strings, sets, sizes), and
// builds the update parameters that bring PVE to the spec while keeping
// what pvectl and PVE own in the same fields (package marks).
package compare

import (
	"maps"
	"net"
	"net/url"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/planner/marks"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/secret"
)

// CreateOnly sub-keys are consumed by the create call and never read back,
// so their absence in live state is not drift.
var CreateOnly = map[string]bool{"import-from": true}

// setKeys hold lists whose order PVE does not keep (or does not care about:
// bridge_vids "2-10 100" allows the same VLANs as "100 2-10").
var setKeys = map[string]bool{"bridge_ports": true, "slaves": true, "tags": true, "bridge_vids": true}

// setFormats are the list formats (of the schema) whose order PVE does not
// keep or that carry none: pve-storage Plugin.pm decode_value reads a
// storage's content and nodes into a hash (and prints content-dirs
// sorted), PVE sorts tags, interface and VLAN lists are sets, and Ceph
// tries every monitor of monhost. Not every "-list" is a set: a guest's
// nameserver (address-list) and searchdomain (dns-name-list) keep their
// order, as resolv.conf does, so they are not here.
var setFormats = map[string]bool{
	"pve-storage-content-list": true, "pve-node-list": true, "pve-dir-override-list": true,
	"pve-tag-list": true, "pve-iface-list": true, "pve-vlan-id-or-range-list": true,
	"pve-storage-portal-dns-list": true,
}

// FixedSizeDisks get a size PVE chooses (4 MiB for an OVMF vars or TPM
// state volume), whatever "STOR:N" asked for: their size is never drift.
var FixedSizeDisks = lazyre.New(`^(efidisk|tpmstate)\d+$`)

// CommentKeys are free text whose end PVE rewrites: a container's
// description gains a newline (pve-container parse_pct_config), a VM's
// loses its trailing whitespace (qemu-server parse_vm_config), an
// interface's comments gain a newline.
var CommentKeys = map[string]bool{"description": true, "comments": true, "comment": true}

// trailingSpace is what Perl's \s matches at the end of a comment.
const trailingSpace = " \t\n\r\f\v"

// FieldDiff is one changed field. Path is the PVE key ("memory"), a
// sub-key ("net1.tag") or a pvectl key ("running").
type FieldDiff struct {
	Path   string `json:"path"`
	Before any    `json:"before"`
	After  any    `json:"after"`
	// Line, when set, is how the human plan shows one item of an ordered
	// list ("[2] in ACCEPT tcp 22 from +admins", "[3] moved from 5"),
	// after the item's symbol, instead of "path: before → after".
	Line string `json:"line,omitempty"`
	// Label, when set, is the key the plan text shows instead of Path:
	// the convenience the user wrote (ip for ipconfig0.ip, vlan for
	// net0.tag). Path stays PVE's, for the effects, privileges and JSON.
	Label string `json:"label,omitempty"`
}

// Shown is the key the plan text names: Label, else Path.
func (d FieldDiff) Shown() string {
	if d.Label != "" {
		return d.Label
	}
	return d.Path
}

// Comparer compares desired wire values with live ones using the facts of
// the kind's create method (m may be nil: then only type-less rules apply).
type Comparer struct {
	M *schema.Method
}

func (c Comparer) Param(key string) *schema.Param {
	if c.M == nil {
		return nil
	}
	p, ok := c.M.Param(key)
	if !ok {
		return nil
	}
	return p
}

// DiffParams compares only the keys the user wrote (minus skip) plus the
// keys to remove; live keys nobody asked about are never drift.
func (c Comparer) DiffParams(desired map[string]string, remove []string, live *pve.Config, skip map[string]bool) []FieldDiff {
	var out []FieldDiff
	for _, k := range slices.Sorted(maps.Keys(desired)) {
		if skip[k] {
			continue
		}
		dv := desired[k]
		lv, has := live.Lookup(k)
		switch k {
		case "description":
			// pvectl's own blocks in it are not the user's text.
			lv = marks.UserDescription(lv)
		case "tags":
			// Nor is the owner tag the user's (package marks), unless the
			// spec sets it too.
			if !marks.HasOwnerTag(dv) {
				lv = marks.WithoutOwnerTag(lv)
			}
		}
		p := c.Param(k)
		switch {
		case !has:
			if dv == "" || IsDefault(k, p, dv) || IsDefaultPS(p, dv) {
				continue
			}
			out = append(out, Diff(k, nil, dv))
		case p != nil && len(p.SubKeys()) > 0:
			out = append(out, c.diffPropertyString(k, p, dv, lv)...)
		case !EqualScalar(k, p, dv, lv):
			out = append(out, Diff(k, lv, dv))
		}
	}
	for _, k := range SortedUnique(remove) {
		if lv, has := live.Lookup(k); has && !skip[k] {
			out = append(out, Diff(k, lv, nil))
		}
	}
	return out
}

// Diff builds a FieldDiff, masking secrets.
func Diff(path string, before, after any) FieldDiff {
	key := path
	if i := strings.IndexByte(key, '.'); i >= 0 {
		key = key[:i]
	}
	if secret.Key(key) {
		if before != nil {
			before = secret.Shown
		}
		if after != nil {
			after = secret.Shown
		}
	}
	return FieldDiff{Path: path, Before: before, After: after}
}

// DiskVolRE matches a volume written as "STORAGE:SIZE" (GiB) or "STORAGE:VOLUME".
var DiskVolRE = lazyre.New(`^([^:]+):(.+)$`)

// diffPropertyString compares sub-key by sub-key, only the sub-keys the user wrote.
func (c Comparer) diffPropertyString(key string, p *schema.Param, dv, lv string) []FieldDiff {
	dItems, err1 := schema.ParsePropertyString(dv, p)
	lItems, err2 := schema.ParsePropertyString(lv, p)
	if err1 != nil || err2 != nil {
		if EqualScalar(key, nil, dv, lv) {
			return nil
		}
		return []FieldDiff{Diff(key, lv, dv)}
	}
	live := map[string]string{}
	for _, it := range lItems {
		live[it.Key] = it.Value
	}
	// A one-field format ("memory" = [current=]N) reads best as the key itself.
	props := p.SubKeys()
	single := len(props) == 1
	path := func(sub string) string {
		if single {
			return key
		}
		return key + "." + sub
	}
	var out []FieldDiff
	volKey := VolumeKey(props)
	isDisk := volKey != ""
	for _, it := range dItems {
		if CreateOnly[it.Key] {
			continue
		}
		if isDisk && it.Key == volKey {
			out = append(out, diffDiskFile(key, it.Value, live[volKey], live["size"])...)
			continue
		}
		sp := props[it.Key]
		lvv, has := live[it.Key]
		if !has && isDisk && it.Key == "format" {
			// PVE drops format= once it allocated the volume; the volume
			// name tells the format (no extension: a raw block device).
			lvv, has = volumeFormat(live[volKey]), true
		}
		if !has {
			if IsDefault(it.Key, sp, it.Value) {
				continue
			}
			out = append(out, Diff(path(it.Key), nil, it.Value))
			continue
		}
		if !EqualScalar(it.Key, sp, it.Value, lvv) {
			out = append(out, Diff(path(it.Key), lvv, it.Value))
		}
	}
	return out
}

// VolumeKey is the sub-key naming a disk's volume: "file" for a VM's
// drives, "volume" for a container's rootfs and mount points; "" when the
// property string is not a disk.
func VolumeKey(props map[string]*schema.Param) string {
	for _, k := range []string{"file", "volume"} {
		if p, ok := props[k]; ok && p.DefaultKey {
			return k
		}
	}
	return ""
}

// diffDiskFile compares a desired disk volume with the one PVE wrote back:
// "local-lvm:32" (allocate 32 GiB) equals "local-lvm:vm-100-disk-0" with
// size=32G; "local-lvm:cloudinit" equals "local-lvm:vm-100-cloudinit".
func diffDiskFile(key, want, got, gotSize string) []FieldDiff {
	if want == got {
		return nil
	}
	wm := DiskVolRE.FindStringSubmatch(want)
	gm := DiskVolRE.FindStringSubmatch(got)
	if wm == nil || gm == nil {
		return []FieldDiff{Diff(key+".file", NilIfEmpty(got), want)}
	}
	vol := wm[2]
	if namedVolume(want) {
		// An existing volume is attached as it is: another one, on
		// another storage too, is another file, not a disk that moves.
		return []FieldDiff{Diff(key+".file", got, want)}
	}
	var out []FieldDiff
	if wm[1] != gm[1] {
		out = append(out, Diff(key+".storage", gm[1], wm[1]))
	}
	switch {
	case vol == "cloudinit":
		if !strings.Contains(gm[2], "cloudinit") {
			out = append(out, Diff(key+".file", got, want))
		}
	case IsNumber(vol):
		if vol == "0" || FixedSizeDisks.MatchString(key) { // "STOR:0,import-from=…": the size comes from the image
			break
		}
		if !equalSize(vol+"G", gotSize) {
			out = append(out, Diff(key+".size", NilIfEmpty(gotSize), vol+"G"))
		}
	}
	return out
}

// namedVolume reports whether a drive's volume names an existing one
// ("local:iso/seed.iso", "none") rather than asking PVE to allocate one
// ("local-lvm:32", "local-lvm:0,import-from=…", "local-lvm:cloudinit").
func namedVolume(v string) bool {
	m := DiskVolRE.FindStringSubmatch(v)
	if m == nil {
		return true
	}
	return m[2] != "cloudinit" && !IsNumber(m[2])
}

func NilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// volumeFormat guesses a volume's format from its name the way PVE's
// storage plugins name files: "…/vm-100-disk-0.qcow2" is qcow2; volumes
// without an extension (LVM, ZFS, Ceph) are raw.
func volumeFormat(volid string) string {
	name := volid[strings.LastIndexByte(volid, '/')+1:]
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		switch ext := name[i+1:]; ext {
		case "qcow2", "vmdk", "raw":
			return ext
		}
	}
	return "raw"
}

// IsDefault reports whether v is what PVE assumes when the key is absent.
// A boolean without a schema default is false when absent: PVE drops
// false flags when it writes them (`autostart: 0` reads back as nothing).
func IsDefault(key string, p *schema.Param, v string) bool {
	if p == nil {
		return false
	}
	if p.Default == nil {
		b, ok := schema.ParseBool(v)
		return p.Type == "boolean" && ok && !b
	}
	return EqualScalar(key, p, schema.FormValue(p.Default), v)
}

// IsDefaultPS reports whether a property string only spells out defaults
// ("memory: 512" is PVE's default [current=]512).
func IsDefaultPS(p *schema.Param, v string) bool {
	if p == nil || len(p.SubKeys()) == 0 {
		return false
	}
	items, err := schema.ParsePropertyString(v, p)
	if err != nil || len(items) == 0 {
		return false
	}
	props := p.SubKeys()
	for _, it := range items {
		if !IsDefault(it.Key, props[it.Key], it.Value) {
			return false
		}
	}
	return true
}

// EqualScalar compares two wire values of one key semantically.
func EqualScalar(key string, p *schema.Param, a, b string) bool {
	if a == b {
		return true
	}
	switch {
	case key == "comments":
		return ifaceComment(a) == ifaceComment(b)
	case CommentKeys[key]:
		return strings.TrimRight(a, trailingSpace) == strings.TrimRight(b, trailingSpace)
	case setKeys[key] || (p != nil && setFormats[p.Format]):
		return EqualSet(a, b)
	case p != nil && p.Format == "pve-storage-path":
		// A directory storage's path is stored canonical (pve-storage
		// DirPlugin.pm check_config): "/srv/vz/" is "/srv/vz".
		return path.Clean(a) == path.Clean(b)
	case key == "size" || (p != nil && p.Format == "disk-size"):
		return equalSize(a, b)
	case key == "macaddr":
		return strings.EqualFold(a, b)
	case key == "sshkeys":
		// URL-encoded by whoever wrote them (the GUI escapes "@" and "=",
		// Go does not): compare the keys themselves.
		return UnescapeKeys(a) == UnescapeKeys(b)
	case key == "netmask":
		x, ok1 := maskBits(a)
		y, ok2 := maskBits(b)
		return ok1 && ok2 && x == y
	case secret.Key(key) && (secret.Masked(a) || secret.Masked(b)):
		// PVE answers "**********" for a stored secret (cipassword): it
		// cannot be compared, and resending it each plan would be an
		// update that never converges.
		return true
	}
	typ := ""
	if p != nil {
		typ = p.Type
	}
	switch typ {
	case "boolean":
		x, ok1 := schema.ParseBool(a)
		y, ok2 := schema.ParseBool(b)
		return ok1 && ok2 && x == y
	case "integer", "number", "":
		x, err1 := strconv.ParseFloat(a, 64)
		y, err2 := strconv.ParseFloat(b, 64)
		return err1 == nil && err2 == nil && x == y
	}
	return false
}

// ifaceComment is an interface comment as PVE reads it back from
// /etc/network/interfaces: a "#" line each, trailing blanks dropped
// (pve-common Network/Interfaces.pm).
func ifaceComment(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r\f\v")
	}
	return strings.Join(lines, "\n")
}

func UnescapeKeys(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		s = u
	}
	return strings.TrimRight(s, "\n")
}

// maskBits reads an IPv4 netmask as a prefix length: PVE reads
// "netmask 255.255.255.0" back as "24".
func maskBits(s string) (int, bool) {
	if n, err := strconv.Atoi(s); err == nil {
		return n, n >= 0 && n <= 32
	}
	ip := net.ParseIP(s).To4()
	if ip == nil {
		return 0, false
	}
	ones, bits := net.IPMask(ip).Size()
	return ones, bits == 32
}

func IsNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// SplitSet splits a list written with ";", ",", or spaces into a sorted set.
func SplitSet(s string) []string {
	f := schema.SplitList(s)
	slices.Sort(f)
	return slices.Compact(f)
}

func EqualSet(a, b string) bool {
	x, y := SplitSet(a), SplitSet(b)
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// ParseSize reads a PVE disk size ("32G", "512M", "1.5T"; a bare number
// is bytes). The "STOR:32" create form means GiB: diffDiskFile appends the
// G before comparing.
func ParseSize(s string) (int64, bool) { return schema.ParseSize(strings.TrimSpace(s)) }

func equalSize(a, b string) bool {
	x, ok1 := ParseSize(a)
	y, ok2 := ParseSize(b)
	return ok1 && ok2 && x == y
}

func SortedUnique(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	j := 0
	for i, x := range out {
		if i == 0 || x != out[j-1] {
			out[j] = x
			j++
		}
	}
	return out[:j]
}

// UpdateValue is what an update sends for key: the live property string with
// the desired sub-keys laid over it, so that what PVE generated (MAC
// addresses, disk volume names) survives the write.
func (c Comparer) UpdateValue(key, desired, live string) string {
	switch key {
	case "description":
		return marks.WithBlocks(desired, live)
	case "tags":
		if marks.HasOwnerTag(live) {
			return marks.WithOwnerTag(desired) // the owner tag stays
		}
	}
	p := c.Param(key)
	if p == nil || len(p.SubKeys()) == 0 || live == "" {
		return desired
	}
	want, err1 := schema.ParsePropertyString(desired, p)
	have, err2 := schema.ParsePropertyString(live, p)
	if err1 != nil || err2 != nil {
		return desired
	}
	volKey := VolumeKey(p.SubKeys())
	isDisk := volKey != ""
	if v, ok := schema.PropValue(want, volKey); isDisk && ok && namedVolume(v) {
		if lv, _ := schema.PropValue(have, volKey); lv != v {
			// Another existing volume (a config drive's new version): PVE
			// reads its size itself.
			have = schema.SetProp(schema.DeleteProp(have, "size"), volKey, v)
		}
	}
	if v, ok := schema.PropValue(want, volKey); isDisk && ok && strings.HasSuffix(v, ":cloudinit") {
		if lv, _ := schema.PropValue(have, volKey); !strings.HasPrefix(lv, strings.TrimSuffix(v, "cloudinit")) {
			// A cloud-init drive on another storage is made anew there.
			have = schema.SetProp(schema.DeleteProp(have, "size"), volKey, v)
		}
	}
	idx := map[string]int{}
	for i, it := range have {
		idx[it.Key] = i
	}
	for _, it := range want {
		if CreateOnly[it.Key] || (isDisk && (it.Key == "format" || it.Key == volKey && Allocates(it.Value))) {
			// The volume exists: its name and format are PVE's now.
			continue
		}
		if i, ok := idx[it.Key]; ok {
			have[i].Value = it.Value
		} else {
			idx[it.Key] = len(have)
			have = append(have, it)
		}
	}
	return schema.FormatPropertyString(have, p)
}

// Allocates reports whether a drive's volume asks PVE to make one
// ("STOR:32", "STOR:0" with import-from, "STOR:cloudinit") rather than
// naming one (an ISO image, an existing volume, "none").
func Allocates(vol string) bool {
	m := DiskVolRE.FindStringSubmatch(vol)
	return m != nil && (IsNumber(m[2]) || m[2] == "cloudinit")
}

// TopKey is the parameter a diff path belongs to ("net1.tag" → "net1").
func TopKey(path string) string {
	if i := strings.IndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return path
}

// UpdateParams builds an update's wire parameters from its diffs: changed
// keys with their merged values and "delete" for removed ones. Keys in skip
// (pvectl's own, or handled by another call) are left out.
func (c Comparer) UpdateParams(diffs []FieldDiff, desired map[string]string, live *pve.Config, skip func(FieldDiff) bool) map[string]string {
	out := map[string]string{}
	var del []string
	for _, d := range diffs {
		if skip != nil && skip(d) {
			continue
		}
		k := TopKey(d.Path)
		if _, done := out[k]; done {
			continue
		}
		if dv, ok := desired[k]; ok {
			out[k] = c.UpdateValue(k, dv, live.Get(k))
		} else if d.After == nil {
			del = append(del, k)
		}
	}
	// A key PVE takes only beside another (the schema's requires: a
	// backup job's notes-template and its storage) brings the other
	// along when the spec sets it, unchanged or not: PVE refuses the one
	// alone (pve-common src/PVE/JSONSchema.pm check_object).
	for _, k := range slices.Sorted(maps.Keys(out)) {
		if p := c.Param(k); p != nil && p.Requires != "" {
			if _, sent := out[p.Requires]; !sent {
				if dv, ok := desired[p.Requires]; ok {
					out[p.Requires] = c.UpdateValue(p.Requires, dv, live.Get(p.Requires))
				}
			}
		}
	}
	if len(del) > 0 {
		out["delete"] = strings.Join(SortedUnique(del), ",")
	}
	return out
}

// Reasons turns diffs into "memory changed" lines, one per parameter.
func Reasons(diffs []FieldDiff) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range diffs {
		k := TopKey(d.Path)
		if seen[k] {
			continue
		}
		seen[k] = true
		switch {
		case d.Before == nil:
			out = append(out, k+" added")
		case d.After == nil && !strings.Contains(d.Path, "."):
			out = append(out, k+" removed")
		default:
			out = append(out, k+" changed")
		}
	}
	return out
}
