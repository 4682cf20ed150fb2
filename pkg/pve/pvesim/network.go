package pvesim

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Node networking follows pve-manager PVE/API2/Network.pm (the API calls)
// and pve-common src/PVE/Network/Interfaces.pm (the writer and reader of
// /etc/network/interfaces). PVE keeps no interface state of its own: every
// call reads the file, changes the parsed hash and writes the file back, so
// what a later call sees is what the written file reads back as. The
// simulator does the same in three steps: netparams.go turns a call into
// the hash (and its 400s), netfile.go checks and writes it (the writer's
// dies are 500s, and nothing is written) and reads it back.

func (s *Server) networkRoutes() []route {
	return append(crudRoutes("/nodes/{node}/network", "/{iface}",
		s.listNetwork, s.createIface, s.getIface, s.updateIface, s.deleteIface),
		r("PUT /nodes/{node}/network", s.applyNetwork),
		r("DELETE /nodes/{node}/network", s.revertNetwork))
}

// nodeNet models /etc/network/interfaces (Running) and, when edits are
// staged, /etc/network/interfaces.new (Staged).
type nodeNet struct {
	Running map[string]*iface `json:"running"`
	Staged  map[string]*iface `json:"staged,omitempty"`
	// Modification times (unix seconds) of both files, for the diff header;
	// 0 for the running file means "since boot".
	RunningAt int64 `json:"running_at,omitempty"`
	StagedAt  int64 `json:"staged_at,omitempty"`
}

// iface is one interface as PVE's reader returns it from the file (and, in
// between, as an API call leaves it before the writer runs).
type iface struct {
	Name      string   `json:"iface"`
	Type      string   `json:"type"`
	Autostart bool     `json:"autostart,omitempty"`
	Method    string   `json:"method,omitempty"`
	Method6   string   `json:"method6,omitempty"`
	Families  []string `json:"families,omitempty"`
	Priority  int      `json:"priority,omitempty"` // position in the file; 0: not written yet
	CIDR      string   `json:"cidr,omitempty"`
	// NoMask: the file holds the address without a mask (after a PUT
	// deleted netmask), read back as a /32 with no netmask key.
	NoMask   bool   `json:"no_mask,omitempty"`
	Gateway  string `json:"gateway,omitempty"`
	CIDR6    string `json:"cidr6,omitempty"`
	Gateway6 string `json:"gateway6,omitempty"`
	// Bridge settings. BridgeVlanAware is whether the key is defined at
	// all: the writer enables VLAN awareness for any value, 0 included.
	BridgePorts     string `json:"bridge_ports,omitempty"`
	BridgeVlanAware bool   `json:"bridge_vlan_aware,omitempty"`
	BridgeVids      string `json:"bridge_vids,omitempty"`
	BridgeSTP       string `json:"bridge_stp,omitempty"`
	BridgeFD        string `json:"bridge_fd,omitempty"`
	// Bond settings.
	Slaves             string `json:"slaves,omitempty"`
	BondMode           string `json:"bond_mode,omitempty"`
	BondPrimary        string `json:"bond-primary,omitempty"`
	BondXmitHashPolicy string `json:"bond_xmit_hash_policy,omitempty"`
	MTU                int    `json:"mtu,omitempty"`
	VlanID             int    `json:"vlan-id,omitempty"`
	VlanRawDevice      string `json:"vlan-raw-device,omitempty"`
	Comments           string `json:"comments,omitempty"`
	Comments6          string `json:"comments6,omitempty"`
	Exists             bool   `json:"exists,omitempty"`
}

func (i *iface) hasFamily(f string) bool { return slices.Contains(i.Families, f) }

// item renders an interface as GET /nodes/{node}/network returns it: the
// reader's hash. Values the reader takes from the file stay strings (mtu,
// vlan-id, the netmasks as prefix lengths, bond_miimon) although the API
// schema calls mtu, vlan-id and netmask6 integers; flags the reader sets
// are numbers.
func (i *iface) item(active bool) map[string]any {
	m := map[string]any{"iface": i.Name, "type": i.Type, "method": orDefault(i.Method, "manual"),
		"method6": orDefault(i.Method6, "manual"), "families": slices.Clone(i.Families)}
	if len(i.Families) == 0 {
		m["families"] = []string{"inet"}
	}
	if i.Priority > 0 {
		m["priority"] = i.Priority
	}
	flags := map[string]bool{"autostart": i.Autostart, "active": active, "exists": i.Exists,
		"bridge_vlan_aware": i.BridgeVlanAware}
	for k, on := range flags {
		if on {
			m[k] = 1
		}
	}
	if i.CIDR != "" {
		addr, bits, _ := strings.Cut(i.CIDR, "/")
		m["cidr"], m["address"], m["netmask"] = i.CIDR, addr, bits
		if i.NoMask {
			delete(m, "netmask")
		}
	}
	if i.CIDR6 != "" {
		addr, bits, _ := strings.Cut(i.CIDR6, "/")
		m["cidr6"], m["address6"], m["netmask6"] = i.CIDR6, addr, bits
	}
	str := map[string]string{"gateway": i.Gateway, "gateway6": i.Gateway6, "bridge_vids": i.BridgeVids,
		"bridge_stp": i.BridgeSTP, "bridge_fd": i.BridgeFD, "bond_mode": i.BondMode,
		"bond-primary": i.BondPrimary, "bond_xmit_hash_policy": i.BondXmitHashPolicy,
		"vlan-raw-device": i.VlanRawDevice, "comments": i.Comments}
	for k, v := range str {
		if v != "" {
			m[k] = v
		}
	}
	switch i.Type {
	case "bridge":
		// "bridge-ports none" reads back as an empty list, not as nothing.
		m["bridge_ports"] = i.BridgePorts
	case "bond":
		m["slaves"] = i.Slaves
		m["bond_miimon"] = "100"
	default:
		if i.BridgePorts != "" {
			m["bridge_ports"] = i.BridgePorts
		}
		if i.Slaves != "" {
			m["slaves"] = i.Slaves
		}
	}
	if i.MTU > 0 {
		m["mtu"] = strconv.Itoa(i.MTU)
	}
	if i.VlanID > 0 {
		m["vlan-id"] = strconv.Itoa(i.VlanID)
	}
	return m
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// view is the staged configuration when edits are pending, else the running one.
func (n *nodeNet) view() map[string]*iface {
	if n.Staged != nil {
		return n.Staged
	}
	return n.Running
}

// edit is a copy of the current view for one API call to change; only a
// successful write (stage) replaces the view with it.
func (n *nodeNet) edit() map[string]*iface {
	out := make(map[string]*iface, len(n.view()))
	for k, i := range n.view() {
		c := *i
		c.Families = slices.Clone(i.Families)
		out[k] = &c
	}
	return out
}

// stage writes cfg to interfaces.new as pve-common's writer does: its
// checks fail the call with nothing written; on success cfg is what the
// file reads back as.
func (n *nodeNet) stage(cfg map[string]*iface) error {
	if err := checkInterfaces(cfg); err != nil {
		return err
	}
	reread(cfg)
	n.Staged, n.StagedAt = cfg, time.Now().Unix()
	return nil
}

// changes is what PVE runs to show staged edits, `diff -b -N -u` of the two
// files, headers with their modification times included.
func (n *nodeNet) changes(boot int64) string {
	if n.Staged == nil {
		return ""
	}
	stamp := func(unix int64) string {
		return time.Unix(unix, 0).Format("2006-01-02 15:04:05.000000000 -0700")
	}
	running := n.RunningAt
	if running == 0 {
		running = boot
	}
	return unifiedDiff("/etc/network/interfaces\t"+stamp(running), "/etc/network/interfaces.new\t"+stamp(n.StagedAt),
		render(n.Running), render(n.Staged))
}

func matchType(filter string, i *iface) bool {
	switch filter {
	case "":
		return true
	case "any_bridge", "any_local_bridge":
		return i.Type == "bridge" || i.Type == "OVSBridge"
	case "include_sdn": // every interface, and the vnets
		return true
	}
	return i.Type == filter
}

// active is whether the interface is up. The reader sets it from the
// kernel's IFF_UP flag (pve-common src/PVE/ProcFSTools.pm
// get_active_network_interfaces, read in Network/Interfaces.pm
// read_etc_network_interfaces): a NIC the host lacks is never up, and
// `ifreload -a` brings up only what the running file marks auto and the
// ports and slaves below those - an unused NIC stays down.
func (n *nodeNet) active(i *iface) bool {
	r, running := n.Running[i.Name]
	switch {
	case !running:
		return false
	case r.Type == "loopback":
		return true
	case r.Type == "eth" && !r.Exists:
		return false
	}
	return brought(n.Running, i.Name)
}

func (s *Server) listNetwork(q *request) (any, error) {
	n := s.st.Net[q.vars["node"]]
	out := []map[string]any{}
	view := n.view()
	for _, name := range slices.Sorted(maps.Keys(view)) {
		i := view[name]
		// PVE does not list the loopback device.
		if i.Type == "loopback" || !matchType(q.get("type"), i) {
			continue
		}
		// Bridges the caller may not use or audit are left out (pve-manager
		// API2/Network.pm index); the staged changes are shown to all.
		if (i.Type == "bridge" || i.Type == "OVSBridge") && !s.canSeeBridge(q.user, i.Name) {
			continue
		}
		out = append(out, i.item(n.active(i)))
	}
	out = append(out, s.sdnLocalVnets(q.user, q.vars["node"], q.get("type"))...)
	if ch := n.changes(s.st.Boot[q.vars["node"]]); ch != "" {
		return withTop{data: out, top: map[string]any{"changes": ch}}, nil
	}
	return out, nil
}

func (s *Server) getIface(q *request) (any, error) {
	n := s.st.Net[q.vars["node"]]
	i, ok := n.view()[q.vars["iface"]]
	if !ok {
		return nil, paramErr1("iface", "interface does not exist")
	}
	return i.item(n.active(i)), nil
}

// createIface is pve-manager Network.pm create_network.
func (s *Server) createIface(q *request) (any, error) {
	n := s.st.Net[q.vars["node"]]
	name := q.get("iface")
	cfg := n.edit()
	if _, exists := cfg[name]; exists {
		return nil, paramErr1("iface", "interface already exists")
	}
	return n.putIface(q, cfg, name, nil)
}

// updateIface is pve-manager Network.pm update_network.
func (s *Server) updateIface(q *request) (any, error) {
	n := s.st.Net[q.vars["node"]]
	name := q.vars["iface"]
	cfg := n.edit()
	old, ok := cfg[name]
	if !ok {
		return nil, paramErr1("iface", "interface does not exist")
	}
	return n.putIface(q, cfg, name, old)
}

// putIface is the end of create and update: the interface built from the
// request's parameters (over old, nil for a new one), put into cfg, and
// cfg staged.
func (n *nodeNet) putIface(q *request, cfg map[string]*iface, name string, old *iface) (any, error) {
	i, err := ifaceFromParams(q, cfg, name, old)
	if err != nil {
		return nil, err
	}
	cfg[name] = i
	return nil, n.stage(cfg)
}

// deleteIface is pve-manager Network.pm delete_network: the writer's
// checks still run, so removing a bridge's port fails.
func (s *Server) deleteIface(q *request) (any, error) {
	n := s.st.Net[q.vars["node"]]
	name := q.vars["iface"]
	cfg := n.edit()
	if _, ok := cfg[name]; !ok {
		return nil, paramErr1("iface", "interface does not exist")
	}
	delete(cfg, name)
	return nil, n.stage(cfg)
}

func (s *Server) revertNetwork(q *request) (any, error) {
	n := s.st.Net[q.vars["node"]]
	n.Staged, n.StagedAt = nil, 0
	return nil, nil
}

// applyNetwork is pve-manager Network.pm reload_network_config: the worker
// moves interfaces.new over interfaces first and runs `ifreload -a` after,
// so a failed reload leaves the new file in place and nothing staged.
func (s *Server) applyNetwork(q *request) (any, error) {
	return s.reloadNodeNetwork(q.vars["node"], ""), nil
}

// reloadNodeNetwork is reload_network_config's srvreload worker: the
// staged file moved into place, the node's SDN file generated from the
// running SDN config (sdnnode.go), `ifreload -a`; user runs it ("": the
// caller).
func (s *Server) reloadNodeNetwork(node, user string) string {
	return s.startWorker(node, "srvreload", "networking", worker{user: user, run: func(t *task) error {
		n := s.st.Net[node]
		s.sdnGenerate(node, n.Running, t)
		if n.Staged != nil {
			n.Running, n.Staged = n.Staged, nil
			n.RunningAt, n.StagedAt = time.Now().Unix(), 0
		}
		return ifreload(n.Running, t)
	}}).UPID
}

// ifreload is what `ifreload -a` (ifupdown2) fails on here: a bond slave
// or bridge port that the file names but the host lacks (a NIC stanza
// left from a renamed or removed card; the writer accepts it, as the
// reader types it "eth" by its name). ifupdown2's bond and bridge addons
// log "skipping slave X, does not exist" / "bridge port X does not
// exist" as errors and exit 1; the worker prints each "error: IFACE:"
// line as "IFACE : LINE " and dies with run_command's message.
func ifreload(cfg map[string]*iface, t *task) error {
	failed := false
	for _, d := range writeOrder(cfg) {
		if !brought(cfg, d.Name) {
			continue
		}
		var ports []string
		var format string
		switch d.Type {
		case "bond":
			ports, format = strings.Fields(d.Slaves), "error: %s: skipping slave %s, does not exist"
		case "bridge":
			ports, format = strings.Fields(d.BridgePorts), "error: %s: bridge port %s does not exist"
		}
		for _, p := range ports {
			if n := cfg[p]; n != nil && n.Type == "eth" && !n.Exists {
				t.logf("%s : "+format+" ", d.Name, d.Name, p)
				failed = true
			}
		}
	}
	if failed {
		return dieErr("command 'ifreload -a' failed: exit code 1")
	}
	return nil
}

// brought reports whether `ifreload -a` brings name up: it is marked auto,
// or it is a port or slave of one that is (ifupdown2 brings lower
// interfaces up first).
func brought(cfg map[string]*iface, name string) bool {
	seen := map[string]bool{}
	var up func(string) bool
	up = func(n string) bool {
		if seen[n] {
			return false
		}
		seen[n] = true
		if i := cfg[n]; i != nil && i.Autostart {
			return true
		}
		for _, u := range slices.Sorted(maps.Keys(cfg)) {
			if slices.Contains(portsOf(cfg[u]), n) && up(u) {
				return true
			}
		}
		return false
	}
	return up(name)
}
