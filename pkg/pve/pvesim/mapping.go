package pvesim

import (
	"crypto/sha1"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// PCI resource mappings (/cluster/mapping/pci, pve-manager
// PVE/API2/Cluster/Mapping/PCI.pm; the config is pve-guest-common
// src/PVE/Mapping/PCI.pm's mapping/pci.cfg) and the PCI devices of the
// simulated nodes, which a VM's hostpciN is checked against when it
// starts (qemu-server src/PVE/QemuServer/PCI.pm parse_hostpci,
// parse_hostpci_devices).

// pciMapping is one section of mapping/pci.cfg. mdev and
// live-migration-capable are kept as sent: check_config keeps a 0 as it
// keeps a 1, SectionConfig.pm write_config writes a boolean that is
// defined ("\tmdev 0"), and parse_config reads it back, so GET answers
// mdev: 0 after a create with mdev=0 (nil: not set).
type pciMapping struct {
	Description   string   `json:"description,omitempty"`
	Mdev          *bool    `json:"mdev,omitempty"`
	LiveMigration *bool    `json:"live-migration-capable,omitempty"`
	Map           []string `json:"map"`
}

func (m *pciMapping) mdev() bool { return m.Mdev != nil && *m.Mdev }

// liveMigration is whether the mapping is live-migration-capable.
func (m *pciMapping) liveMigration() bool { return m.LiveMigration != nil && *m.LiveMigration }

// boolOpt is a boolean option of a request as check_config keeps it:
// nil when not sent.
func boolOpt(q *request, k string) *bool {
	if !q.has(k) {
		return nil
	}
	b := q.bool(k)
	return &b
}

// bit is a kept boolean as the config file and the JSON answer give it.
func bit(b *bool) int {
	if *b {
		return 1
	}
	return 0
}

// pciDevice is a PCI function of a node as pci_device_info reads it
// from sysfs.
type pciDevice struct {
	path, id, subsystem string
	iommugroup          int
}

// nodePCIDevices are the PCI functions every simulated node has: a GPU
// and its audio function in IOMMU group 14.
func nodePCIDevices() []pciDevice {
	return []pciDevice{
		{path: "0000:01:00.0", id: "10de:2204", subsystem: "10de:1454", iommugroup: 14},
		{path: "0000:01:00.1", id: "10de:1aef", subsystem: "10de:1454", iommugroup: 14},
	}
}

// pciDeviceAt is pci_device_info: the function at path ("0000:01:00.0";
// a path without the function means function 0).
func pciDeviceAt(path string) (pciDevice, bool) {
	path = strings.ToLower(path)
	if !strings.Contains(path, ".") {
		path += ".0"
	}
	if strings.Count(path, ":") == 1 {
		path = "0000:" + path // lspci's short form
	}
	for _, d := range nodePCIDevices() {
		if d.path == path {
			return d, true
		}
	}
	return pciDevice{}, false
}

// mappingRoutes: the PCI mappings, and the directory index above all
// three types (pve-manager PVE/API2/Cluster/Mapping.pm index).
func (s *Server) mappingRoutes() []route {
	return append(crudRoutes("/cluster/mapping/pci", "/{id}",
		s.listPCIMappings, s.createPCIMapping, s.getPCIMapping, s.updatePCIMapping, s.deletePCIMapping),
		r("GET /cluster/mapping", fwIndex("dir", "pci", "usb")))
}

// pciMapDigest is the SHA-1 of mapping/pci.cfg as written.
func (s *Server) pciMapDigest() string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(s.st.PCIMappings)) {
		m := s.st.PCIMappings[id]
		fmt.Fprintf(&b, "%s\n", id)
		if m.Description != "" {
			fmt.Fprintf(&b, "\tdescription %s\n", m.Description)
		}
		if m.LiveMigration != nil {
			fmt.Fprintf(&b, "\tlive-migration-capable %d\n", bit(m.LiveMigration))
		}
		for _, e := range m.Map {
			fmt.Fprintf(&b, "\tmap %s\n", e)
		}
		if m.Mdev != nil {
			fmt.Fprintf(&b, "\tmdev %d\n", bit(m.Mdev))
		}
		b.WriteString("\n")
	}
	return fmt.Sprintf("%x", sha1.Sum([]byte(b.String())))
}

func (m *pciMapping) answer() map[string]any {
	out := map[string]any{"type": "pci", "map": slices.Clone(m.Map)}
	if m.Description != "" {
		out["description"] = m.Description
	}
	if m.Mdev != nil {
		out["mdev"] = bit(m.Mdev)
	}
	if m.LiveMigration != nil {
		out["live-migration-capable"] = bit(m.LiveMigration)
	}
	return out
}

// listPCIMappings lists the mappings the caller may see (Mapping.Modify,
// .Use or .Audit on /mapping/pci/ID); with check-node each gets the
// checks of that node: no entry for it, or an entry its hardware does not
// match.
func (s *Server) listPCIMappings(q *request) (any, error) {
	checkNode := q.get("check-node")
	if err := s.proxyToCheckNode(checkNode); err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(s.st.PCIMappings)) {
		path := "/mapping/pci/" + id
		if !s.can(q.user, path, "Mapping.Modify") && !s.can(q.user, path, "Mapping.Use") && !s.can(q.user, path, "Mapping.Audit") {
			continue
		}
		m := s.st.PCIMappings[id]
		row := m.answer()
		row["id"], row["digest"] = id, s.pciMapDigest()
		if checkNode != "" {
			checks := []map[string]any{}
			entries := nodeEntries(m.Map, checkNode)
			if len(entries) == 0 {
				checks = append(checks, map[string]any{"severity": "warning", "message": "No mapping for node " + checkNode + "."})
			}
			for _, e := range entries {
				if err := assertPCIValid(id, e, m); err != nil {
					checks = append(checks, map[string]any{"severity": "error", "message": "Invalid configuration: " + err.Error()})
				}
			}
			row["checks"] = checks
		}
		out = append(out, row)
	}
	return out, nil
}

// proxyToCheckNode is what becomes of a mapping list's check-node: the
// three index methods proxy to it (proxyto_callback), so pveproxy looks
// the node up and forwards the call before any handler runs (pve-manager
// PVE/HTTPServer.pm rest_handler, remote_node_ip; pve-cluster
// PVE/Cluster.pm remote_node_ip; pve-common PVE/Network.pm
// get_ip_from_hostname): a name no node has fails its hostname lookup,
// a node that is down is not reached.
func (s *Server) proxyToCheckNode(node string) *apiError {
	switch {
	case node == "" || node == "localhost":
		return nil
	case !s.st.hasNode(node):
		return fail(http.StatusInternalServerError,
			"hostname lookup '%s' failed - failed to get address info for: %s: Name or service not known", node, node)
	case s.nodeOffline(node):
		return fail(595, "No route to host")
	}
	return nil
}

// lspci is SysFSTools.pm lspci with a filter: the node's functions whose
// id starts with it (the domain may be left out), so a device without
// its function is all of its functions.
func lspci(filter string) []pciDevice {
	var out []pciDevice
	for _, d := range nodePCIDevices() {
		if strings.HasPrefix(d.path, filter) || strings.HasPrefix(strings.TrimPrefix(d.path, "0000:"), filter) {
			out = append(out, d)
		}
	}
	return out
}

// checkPCIAlternative is parse_hostpci's look at one alternative (the
// host's paths, or one map entry's): every id names a device, and a
// mediated device needs a single function (qemu-server PCI.pm
// parse_hostpci: "cannot use mediated device with multifunction device").
func checkPCIAlternative(ids []string, mdev bool) error {
	n := 0
	for _, id := range ids {
		devs := lspci(id)
		if len(devs) == 0 {
			return fmt.Errorf("no PCI device found for '%s'", id)
		}
		n += len(devs)
	}
	if n > 1 && mdev {
		return fmt.Errorf("cannot use mediated device with multifunction device")
	}
	return nil
}

func (s *Server) getPCIMapping(q *request) (any, error) {
	id := q.vars["id"]
	m, ok := s.st.PCIMappings[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "mapping '%s' not found", id)
	}
	out := m.answer()
	out["digest"] = s.pciMapDigest()
	return out, nil
}

// pciMappingFrom is check_config of a create (Mapping/PCI.pm options:
// map is required): the values of q as a section.
func pciMappingFrom(q *request) (*pciMapping, error) {
	if err := checkNoLineFeed(q.get("description")); err != nil {
		return nil, fail(http.StatusInternalServerError, "%s", err.Error())
	}
	if len(q.params["map"]) == 0 {
		return nil, fail(http.StatusInternalServerError, "missing value for required option 'map'")
	}
	return &pciMapping{Description: q.get("description"), Mdev: boolOpt(q, "mdev"),
		LiveMigration: boolOpt(q, "live-migration-capable"), Map: slices.Clone(q.params["map"])}, nil
}

func (s *Server) createPCIMapping(q *request) (any, error) {
	id := q.get("id")
	m, err := pciMappingFrom(q)
	if err != nil {
		return nil, err
	}
	if _, exists := s.st.PCIMappings[id]; exists {
		return nil, fail(http.StatusInternalServerError, "create hardware mapping failed: pci ID '%s' already defined", id)
	}
	ensureMap(&s.st.PCIMappings)
	s.st.PCIMappings[id] = m
	return nil, s.saveLocked()
}

// updatePCIMapping: PVE checks the values as for a create (map is
// required in every update), under the config lock.
func (s *Server) updatePCIMapping(q *request) (any, error) {
	const failed = "update hardware mapping failed: "
	id := q.vars["id"]
	if d := q.get("digest"); d != "" && d != s.pciMapDigest() {
		return nil, fail(http.StatusInternalServerError, failed+"detected modified configuration - file changed by other user? Try again.")
	}
	old, ok := s.st.PCIMappings[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, failed+"pci ID '%s' does not exist", id)
	}
	m, err := pciMappingFrom(q)
	if err != nil {
		return nil, fail(http.StatusInternalServerError, failed+"%s", err.Error())
	}
	dels, err := mappingDeletes(q, failed, "description", "mdev", "live-migration-capable")
	if err != nil {
		return nil, err
	}
	next := *old
	for _, k := range dels {
		switch k {
		case "description":
			next.Description = ""
		case "mdev":
			next.Mdev = nil
		default:
			next.LiveMigration = nil
		}
	}
	next.Map = m.Map
	if q.has("description") {
		next.Description = m.Description
	}
	if q.has("mdev") {
		next.Mdev = m.Mdev
	}
	if q.has("live-migration-capable") {
		next.LiveMigration = m.LiveMigration
	}
	s.st.PCIMappings[id] = &next
	return nil, s.saveLocked()
}

// mappingDeletes checks an update's delete list: map is required, the
// optional keys may go, and none may be set as well; an error is a 500
// with the failed prefix.
func mappingDeletes(q *request, failed string, optional ...string) ([]string, error) {
	dels := schema.SplitList(q.get("delete"))
	for _, k := range dels {
		switch {
		case k == "map":
			return nil, fail(http.StatusInternalServerError, "%sunable to delete required option 'map'", failed)
		case !slices.Contains(optional, k):
			return nil, fail(http.StatusInternalServerError, "%sno such option '%s'", failed, k)
		case q.has(k):
			return nil, fail(http.StatusInternalServerError, "%scannot set and delete property '%s' at the same time!", failed, k)
		}
	}
	return dels, nil
}

func (s *Server) deletePCIMapping(q *request) (any, error) {
	delete(s.st.PCIMappings, q.vars["id"])
	return nil, s.saveLocked()
}

// assertPCIValid is Mapping/PCI.pm assert_valid: every path of the entry
// exists on the node, and the ids (the IOMMU group of the first) it names
// are the device's — a property the device has must be configured.
func assertPCIValid(name string, e map[string]string, m *pciMapping) error {
	for i, path := range strings.Split(e["path"], ";") {
		if !strings.Contains(path, ".") {
			path += ".0"
		}
		d, ok := pciDeviceAt(path)
		if !ok {
			return fmt.Errorf("pci device '%s' not found", path)
		}
		want := [][3]string{{"id", d.id, e["id"]}, {"subsystem-id", d.subsystem, e["subsystem-id"]}, {"mdev", "0", "0"}}
		if m.mdev() {
			want[2][2] = "1"
		}
		if i == 0 {
			want = append(want, [3]string{"iommugroup", strconv.Itoa(d.iommugroup), e["iommugroup"]})
		}
		slices.SortFunc(want, func(a, b [3]string) int { return strings.Compare(a[0], b[0]) })
		for _, w := range want {
			switch {
			case w[2] == "":
				return fmt.Errorf("missing expected property '%s' for device '%s'", w[0], path)
			case w[1] != w[2]:
				return fmt.Errorf("'%s' does not match for '%s' (%s != %s)", w[0], name, w[1], w[2])
			}
		}
	}
	return nil
}

// checkHostPCI is what a VM start checks of its hostpciN devices
// (PCI.pm parse_hostpci_devices, parse_hostpci): pcie needs q35; a
// mapping needs an entry for the node that the node's hardware matches;
// every device must exist.
func (s *Server) checkHostPCI(v *vm) error {
	q35 := strings.Contains(v.Conf["machine"], "q35")
	for i := range 16 {
		val, ok := v.Conf["hostpci"+strconv.Itoa(i)]
		if !ok {
			continue
		}
		kv := map[string]string{}
		for j, it := range props(val) {
			k := it.Key
			if j == 0 && k == "" {
				k = "host"
			}
			kv[k] = it.Value
		}
		host, mapping := kv["host"], kv["mapping"]
		var alts [][]string
		switch {
		case host != "" && mapping != "":
			return fmt.Errorf("Cannot set both 'host' and 'mapping'.")
		case mapping != "":
			m, ok := s.st.PCIMappings[mapping]
			entries := []map[string]string(nil)
			if ok {
				entries = nodeEntries(m.Map, v.Node)
			}
			if len(entries) == 0 {
				return fmt.Errorf("PCI device mapping not found for '%s'", mapping)
			}
			for _, e := range entries {
				if err := assertPCIValid(mapping, e, m); err != nil {
					return fmt.Errorf("PCI device mapping invalid (hardware probably changed): %w", err)
				}
				alts = append(alts, strings.Split(e["path"], ";"))
			}
		case host != "":
			alts = append(alts, strings.Split(host, ";"))
		default:
			return fmt.Errorf("Either 'host' or 'mapping' must be set.")
		}
		for _, alt := range alts {
			if err := checkPCIAlternative(alt, kv["mdev"] != ""); err != nil {
				return err
			}
		}
		if kv["pcie"] == "1" && !q35 {
			return fmt.Errorf("q35 machine model is not enabled")
		}
	}
	return s.checkMappedUSBDir(v)
}
