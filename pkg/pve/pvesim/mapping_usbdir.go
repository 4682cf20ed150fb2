package pvesim

import (
	"crypto/sha1"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// USB and directory resource mappings (/cluster/mapping/usb and
// /cluster/mapping/dir, pve-manager PVE/API2/Cluster/Mapping/USB.pm and
// Dir.pm; the configs are pve-guest-common src/PVE/Mapping/USB.pm's
// mapping/usb.cfg and Mapping/Dir.pm's mapping/directory.cfg). Both are
// a description and a list of per-node map entries; what a VM start
// makes of a usbN: mapping=… or a virtiofsN: dirid=… is qemu-server
// src/PVE/QemuServer/USB.pm parse_usb_device and
// src/PVE/QemuServer/Virtiofs.pm assert_virtiofs_config.

// devMapping is one section of mapping/usb.cfg or mapping/directory.cfg.
type devMapping struct {
	Description string   `json:"description,omitempty"`
	Map         []string `json:"map"`
}

// mapType is what differs between the USB and the directory mappings.
type mapType struct {
	name string // "usb", "dir"
	// what names the type in PVE's messages ("usb", "dir").
	what string
	// checksKey is the list member carrying the check-node diagnostics:
	// USB.pm's index calls it errors, Dir.pm's (and PCI.pm's) checks.
	checksKey string
	// createFail, updateFail, deleteFail prefix the errors of the writes
	// (the lock_*_config error messages of each API module).
	createFail, updateFail string
	// mappings is the type's config in the state.
	mappings func(st *state) map[string]*devMapping
	// assertWrite is what a create or update checks of the map list
	// beyond the schema (Dir.pm assert_valid_map_list); nil: nothing.
	assertWrite func(s *Server, entries []string) error
	// assertValid is the type's assert_valid of one node entry.
	assertValid func(id string, e map[string]string) error
}

func (s *Server) usbMapType() *mapType {
	return &mapType{name: "usb", what: "usb", checksKey: "errors",
		createFail: "create hardware mapping failed: ", updateFail: "update hardware mapping failed: ",
		mappings: func(st *state) map[string]*devMapping {
			return ensureMap(&st.USBMappings)
		},
		assertValid: assertUSBValid,
	}
}

func (s *Server) dirMapType() *mapType {
	return &mapType{name: "dir", what: "dir", checksKey: "checks",
		createFail: "create directory mapping failed: ", updateFail: "update directory mapping failed: ",
		mappings: func(st *state) map[string]*devMapping {
			return ensureMap(&st.DirMappings)
		},
		assertWrite: assertDirMapList,
		assertValid: func(_ string, e map[string]string) error { return assertDirValid(e["path"]) },
	}
}

func (s *Server) devMappingRoutes() []route {
	var out []route
	for _, t := range []*mapType{s.usbMapType(), s.dirMapType()} {
		out = append(out, crudRoutes("/cluster/mapping/"+t.name, "/{id}",
			func(q *request) (any, error) { return s.listDevMappings(t, q) },
			func(q *request) (any, error) { return s.createDevMapping(t, q) },
			func(q *request) (any, error) { return s.getDevMapping(t, q) },
			func(q *request) (any, error) { return s.updateDevMapping(t, q) },
			func(q *request) (any, error) { return s.deleteDevMapping(t, q) })...)
	}
	return out
}

// devMapDigest is the SHA-1 of the type's config file as written.
func (s *Server) devMapDigest(t *mapType) string {
	var b strings.Builder
	ms := t.mappings(s.st)
	for _, id := range slices.Sorted(maps.Keys(ms)) {
		m := ms[id]
		fmt.Fprintf(&b, "%s\n", id)
		if m.Description != "" {
			fmt.Fprintf(&b, "\tdescription %s\n", m.Description)
		}
		for _, e := range m.Map {
			fmt.Fprintf(&b, "\tmap %s\n", e)
		}
		b.WriteString("\n")
	}
	return fmt.Sprintf("%x", sha1.Sum([]byte(b.String())))
}

// answer is the section as PVE's SectionConfig parse_config reads it
// (its type set on it).
func (m *devMapping) answer(typ string) map[string]any {
	out := map[string]any{"type": typ, "map": slices.Clone(m.Map)}
	if m.Description != "" {
		out["description"] = m.Description
	}
	return out
}

// nodeEntries is get_node_mapping: the map entries of node.
func nodeEntries(entries []string, node string) []map[string]string {
	var out []map[string]string
	for _, e := range entries {
		kv := map[string]string{}
		for _, it := range props(e) {
			kv[it.Key] = it.Value
		}
		if kv["node"] == node {
			out = append(out, kv)
		}
	}
	return out
}

// listDevMappings lists what the caller may see (Mapping.Modify, .Use or
// .Audit on /mapping/<type>/<id>), with check-node the node's diagnostics.
func (s *Server) listDevMappings(t *mapType, q *request) (any, error) {
	checkNode := q.get("check-node")
	if err := s.proxyToCheckNode(checkNode); err != nil {
		return nil, err
	}
	ms := t.mappings(s.st)
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(ms)) {
		path := "/mapping/" + t.name + "/" + id
		if !s.can(q.user, path, "Mapping.Modify") && !s.can(q.user, path, "Mapping.Use") && !s.can(q.user, path, "Mapping.Audit") {
			continue
		}
		row := ms[id].answer(t.name)
		row["id"], row["digest"] = id, s.devMapDigest(t)
		if checkNode != "" {
			checks := []map[string]any{}
			entries := nodeEntries(ms[id].Map, checkNode)
			if len(entries) == 0 {
				checks = append(checks, map[string]any{"severity": "warning", "message": "No mapping for node " + checkNode + "."})
			}
			for _, e := range entries {
				if err := t.assertValid(id, e); err != nil {
					checks = append(checks, map[string]any{"severity": "error", "message": "Invalid configuration: " + err.Error()})
				}
			}
			row[t.checksKey] = checks
		}
		out = append(out, row)
	}
	return out, nil
}

func (s *Server) getDevMapping(t *mapType, q *request) (any, error) {
	id := q.vars["id"]
	m, ok := t.mappings(s.st)[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "mapping '%s' not found", id)
	}
	out := m.answer(t.name)
	out["digest"] = s.devMapDigest(t)
	return out, nil
}

// devMappingFrom is check_config with create set, as both the create and
// the update call it (the options make map required in either).
func (s *Server) devMappingFrom(t *mapType, q *request) (*devMapping, error) {
	if err := checkNoLineFeed(q.get("description")); err != nil {
		return nil, err
	}
	if len(q.params["map"]) == 0 {
		return nil, fmt.Errorf("missing value for required option 'map'")
	}
	m := &devMapping{Description: q.get("description"), Map: slices.Clone(q.params["map"])}
	if t.assertWrite != nil {
		if err := t.assertWrite(s, m.Map); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (s *Server) createDevMapping(t *mapType, q *request) (any, error) {
	id := q.get("id")
	m, err := s.devMappingFrom(t, q)
	if err != nil {
		return nil, fail(http.StatusInternalServerError, "%s", err.Error())
	}
	ms := t.mappings(s.st)
	if _, exists := ms[id]; exists {
		return nil, fail(http.StatusInternalServerError, "%s%s ID '%s' already defined", t.createFail, t.what, id)
	}
	ms[id] = m
	return nil, s.saveLocked()
}

// updateDevMapping: under the config lock, the digest, the id, then the
// values as for a create; delete takes description only (map is
// required).
func (s *Server) updateDevMapping(t *mapType, q *request) (any, error) {
	failed := t.updateFail
	id := q.vars["id"]
	if d := q.get("digest"); d != "" && d != s.devMapDigest(t) {
		return nil, fail(http.StatusInternalServerError, "%sdetected modified configuration - file changed by other user? Try again.", failed)
	}
	ms := t.mappings(s.st)
	old, ok := ms[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, failed+"%s ID '%s' does not exist", t.what, id)
	}
	m, err := s.devMappingFrom(t, q)
	if err != nil {
		return nil, fail(http.StatusInternalServerError, failed+"%s", err.Error())
	}
	dels, err := mappingDeletes(q, failed, "description")
	if err != nil {
		return nil, err
	}
	next := *old
	if len(dels) > 0 { // description, the one key that may go
		next.Description = ""
	}
	next.Map = m.Map
	if q.has("description") {
		next.Description = m.Description
	}
	ms[id] = &next
	return nil, s.saveLocked()
}

func (s *Server) deleteDevMapping(t *mapType, q *request) (any, error) {
	delete(t.mappings(s.st), q.vars["id"])
	return nil, s.saveLocked()
}

// usbDevice is a USB device of a node as SysFSTools scan_usb reads it.
type usbDevice struct{ busPath, id string }

// nodeUSBDevices are the USB devices every simulated node has: a flash
// drive on port 1-2 and a UPS on 1-1.4.
func nodeUSBDevices() []usbDevice {
	return []usbDevice{{busPath: "1-2", id: "0781:5583"}, {busPath: "1-1.4", id: "051d:0002"}}
}

// assertUSBValid is Mapping/USB.pm assert_valid: the device at path has
// the id, or (without a path) a device with the id exists. The id is
// compared as configured: sysfs gives it in lower case, and an entry
// written in upper case (the map format's pattern allows it) matches
// nothing.
func assertUSBValid(name string, e map[string]string) error {
	id := e["id"]
	if path := e["path"]; path != "" {
		for _, d := range nodeUSBDevices() {
			if d.busPath == path {
				if d.id != id {
					return fmt.Errorf("'id' does not match for '%s' (%s != %s)", name, d.id, id)
				}
				return nil
			}
		}
		return fmt.Errorf("usb device '%s' not found", path)
	}
	for _, d := range nodeUSBDevices() {
		if d.id == id {
			return nil
		}
	}
	return fmt.Errorf("usb device '%s' not found", id)
}

// mapDirPathRe is Dir.pm pve_verify_path: absolute, without ;,=().
var mapDirPathRe = lazyre.New(`^/[^;,=()]+`)

// nodeDirs are the directories every simulated node has (the simulator
// keeps no file system): a path is a directory when it is one of these
// or below one; a few well-known files exist as files.
var nodeDirs = []string{"/mnt", "/srv", "/media", "/home", "/tmp", "/var/lib/vz", "/opt"}

var nodeFiles = []string{"/etc/hostname", "/etc/hosts", "/etc/pve/storage.cfg"}

// assertDirValid is Dir.pm assert_valid.
func assertDirValid(path string) error {
	if !mapDirPathRe.MatchString(path) {
		return fmt.Errorf("Value does not look like a valid absolute path. These symbols are currently not allowed in path: ;,=()")
	}
	if slices.Contains(nodeFiles, path) {
		return fmt.Errorf("Path %s exists, but is not a directory", path)
	}
	for _, d := range nodeDirs {
		if path == d || strings.HasPrefix(path, d+"/") {
			return nil
		}
	}
	return fmt.Errorf("Path %s does not exist", path)
}

// assertDirMapList is Dir.pm assert_valid_map_list: the entry of the node
// answering the call (the simulator's first node) is checked there, and
// no node may be listed twice.
func assertDirMapList(s *Server, entries []string) error {
	local := ""
	if len(s.st.Nodes) > 0 {
		local = s.st.Nodes[0]
	}
	count := map[string]int{}
	for _, e := range entries {
		kv := map[string]string{}
		for _, it := range props(e) {
			kv[it.Key] = it.Value
		}
		if kv["node"] == local {
			if err := assertDirValid(kv["path"]); err != nil {
				return err
			}
		}
		count[kv["node"]]++
	}
	for _, n := range slices.Sorted(maps.Keys(count)) {
		if count[n] > 1 {
			return fmt.Errorf("Node '%s' is specified %d times.", n, count[n])
		}
	}
	return nil
}

// checkMappedUSBDir is what a VM start checks of its mapped USB devices
// (QemuServer/USB.pm: an entry for the node, one only, valid) and of its
// virtiofs directories (Virtiofs.pm assert_virtiofs_config, Mapping/Dir.pm
// find_on_current_node, assert_valid; no expose-acl on Windows).
func (s *Server) checkMappedUSBDir(v *vm) error {
	for i := range 14 {
		val, ok := v.Conf["usb"+strconv.Itoa(i)]
		if !ok {
			continue
		}
		name := propOf(val, "mapping", "")
		if name == "" {
			continue
		}
		var entries []map[string]string
		if m, ok := s.st.USBMappings[name]; ok {
			entries = nodeEntries(m.Map, v.Node)
		}
		switch {
		case len(entries) == 0:
			return fmt.Errorf("USB device mapping not found for '%s'", name)
		case len(entries) > 1:
			return fmt.Errorf("More than one USB mapping per host not supported")
		}
		if err := assertUSBValid(name, entries[0]); err != nil {
			return fmt.Errorf("USB Mapping invalid (hardware probably changed): %w", err)
		}
	}
	for i := range 10 {
		val, ok := v.Conf["virtiofs"+strconv.Itoa(i)]
		if !ok {
			continue
		}
		id := propOf(val, "dirid", "dirid")
		m, ok := s.st.DirMappings[id]
		if !ok {
			return fmt.Errorf("Directory ID %s does not exist.", id)
		}
		entries := nodeEntries(m.Map, v.Node)
		switch {
		case len(entries) > 1:
			return fmt.Errorf("More than than one directory mapping for node %s.", v.Node)
		case len(entries) == 0:
			return fmt.Errorf("No directory mapping for node %s.", v.Node)
		}
		// Virtiofs.pm assert_virtiofs_config: after the node's entry is
		// found, before it is checked.
		if acl, _ := schema.ParseBool(propOf(val, "expose-acl", "")); acl && windowsVersion(v.Conf["ostype"]) > 0 {
			return fmt.Errorf("Please disable ACLs for virtiofs on Windows VMs, otherwise" +
				" the virtiofs shared directory cannot be mounted.")
		}
		if err := assertDirValid(entries[0]["path"]); err != nil {
			return fmt.Errorf("directory mapping invalid: %w", err)
		}
	}
	return nil
}

// propOf is sub-key k of a property string; def names the key an
// unnamed first value stands for ("" for none).
func propOf(val, k, def string) string {
	for i, it := range props(val) {
		if it.Key == k || (i == 0 && it.Key == "" && def == k) {
			return it.Value
		}
	}
	return ""
}
