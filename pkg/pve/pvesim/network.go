package pvesim

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

func (s *Server) networkRoutes() []route {
	return []route{
		r("GET /nodes/{node}/network", s.listNetwork),
		r("POST /nodes/{node}/network", s.createIface),
		r("PUT /nodes/{node}/network", s.applyNetwork).withTask(),
		r("DELETE /nodes/{node}/network", s.revertNetwork),
		r("GET /nodes/{node}/network/{iface}", s.getIface),
		r("PUT /nodes/{node}/network/{iface}", s.updateIface),
		r("DELETE /nodes/{node}/network/{iface}", s.deleteIface),
	}
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

type iface struct {
	Name               string `json:"iface"`
	Type               string `json:"type"`
	Autostart          bool   `json:"autostart,omitempty"`
	Method             string `json:"method,omitempty"`
	Method6            string `json:"method6,omitempty"`
	CIDR               string `json:"cidr,omitempty"`
	Gateway            string `json:"gateway,omitempty"`
	CIDR6              string `json:"cidr6,omitempty"`
	Gateway6           string `json:"gateway6,omitempty"`
	BridgePorts        string `json:"bridge_ports,omitempty"`
	BridgeVlanAware    bool   `json:"bridge_vlan_aware,omitempty"`
	BridgeVids         string `json:"bridge_vids,omitempty"`
	BridgeSTP          string `json:"bridge_stp,omitempty"`
	BridgeFD           string `json:"bridge_fd,omitempty"`
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

func (i *iface) normalize() {
	if i.Method == "" {
		i.Method = "manual"
		if i.CIDR != "" {
			i.Method = "static"
		}
	}
	if i.CIDR6 != "" && i.Method6 == "" {
		i.Method6 = "static"
	}
	if i.Type == "bridge" {
		if i.BridgeSTP == "" {
			i.BridgeSTP = "off"
		}
		if i.BridgeFD == "" {
			i.BridgeFD = "0"
		}
	}
}

func typeRank(t string) int {
	switch t {
	case "loopback":
		return 0
	case "eth":
		return 1
	case "bond":
		return 2
	case "vlan":
		return 3
	case "bridge":
		return 4
	}
	return 5
}

// ordered lists interfaces in the order PVE writes them.
func ordered(m map[string]*iface) []*iface {
	out := make([]*iface, 0, len(m))
	for _, i := range m {
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool {
		ra, rb := typeRank(out[a].Type), typeRank(out[b].Type)
		if ra != rb {
			return ra < rb
		}
		return out[a].Name < out[b].Name
	})
	return out
}

// render writes an interfaces file the way pve-common does.
func render(m map[string]*iface) string {
	var b strings.Builder
	for _, i := range ordered(m) {
		if i.Autostart {
			fmt.Fprintf(&b, "auto %s\n", i.Name)
		}
		fmt.Fprintf(&b, "iface %s inet %s\n", i.Name, i.Method)
		opt := func(k, v string) {
			if v != "" {
				fmt.Fprintf(&b, "\t%s %s\n", k, v)
			}
		}
		opt("address", i.CIDR)
		opt("gateway", i.Gateway)
		if i.MTU > 0 {
			opt("mtu", strconv.Itoa(i.MTU))
		}
		switch i.Type {
		case "bridge":
			ports := i.BridgePorts
			if ports == "" {
				ports = "none"
			}
			opt("bridge-ports", ports)
			opt("bridge-stp", i.BridgeSTP)
			opt("bridge-fd", i.BridgeFD)
			if i.BridgeVlanAware {
				opt("bridge-vlan-aware", "yes")
				vids := i.BridgeVids
				if vids == "" {
					vids = "2-4094"
				}
				opt("bridge-vids", vids)
			}
		case "bond":
			slaves := i.Slaves
			if slaves == "" {
				slaves = "none"
			}
			opt("bond-slaves", slaves)
			opt("bond-miimon", "100")
			opt("bond-mode", i.BondMode)
			opt("bond-primary", i.BondPrimary)
			opt("bond-xmit-hash-policy", i.BondXmitHashPolicy)
		case "vlan":
			if i.VlanID > 0 {
				opt("vlan-id", strconv.Itoa(i.VlanID))
			}
			opt("vlan-raw-device", i.VlanRawDevice)
		}
		for _, line := range strings.Split(i.Comments, "\n") {
			if line != "" {
				fmt.Fprintf(&b, "#%s\n", line)
			}
		}
		if i.CIDR6 != "" || i.Method6 != "" {
			fmt.Fprintf(&b, "\niface %s inet6 %s\n", i.Name, orDefault(i.Method6, "static"))
			opt("address", i.CIDR6)
			opt("gateway", i.Gateway6)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nsource /etc/network/interfaces.d/*\n")
	return b.String()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// item renders an interface as GET /nodes/{node}/network returns it.
func (i *iface) item(active bool, priority int) map[string]any {
	m := map[string]any{"iface": i.Name, "type": i.Type, "method": i.Method, "method6": orDefault(i.Method6, "manual"),
		"priority": priority, "families": []string{"inet"}}
	if i.Autostart {
		m["autostart"] = 1
	}
	if active {
		m["active"] = 1
	}
	if i.Exists {
		m["exists"] = 1
	}
	if i.CIDR6 != "" {
		m["families"] = []string{"inet", "inet6"}
		m["cidr6"] = i.CIDR6
		addr, bits, _ := strings.Cut(i.CIDR6, "/")
		m["address6"], m["netmask6"] = addr, bits
	}
	if i.CIDR != "" {
		m["cidr"] = i.CIDR
		if ip, n, err := net.ParseCIDR(i.CIDR); err == nil {
			m["address"] = ip.String()
			m["netmask"] = net.IP(n.Mask).String()
		}
	}
	str := map[string]string{"gateway": i.Gateway, "gateway6": i.Gateway6, "bridge_ports": i.BridgePorts,
		"bridge_vids": i.BridgeVids, "bridge_stp": i.BridgeSTP, "bridge_fd": i.BridgeFD, "slaves": i.Slaves,
		"bond_mode": i.BondMode, "bond-primary": i.BondPrimary, "bond_xmit_hash_policy": i.BondXmitHashPolicy,
		"vlan-raw-device": i.VlanRawDevice, "comments": i.Comments, "comments6": i.Comments6}
	for k, v := range str {
		if v != "" {
			m[k] = v
		}
	}
	if i.Type == "bridge" {
		m["bridge_ports"] = i.BridgePorts
	}
	if i.BridgeVlanAware {
		m["bridge_vlan_aware"] = 1
	}
	if i.MTU > 0 {
		m["mtu"] = i.MTU
	}
	if i.VlanID > 0 {
		m["vlan-id"] = i.VlanID
	}
	return m
}

// view is the staged configuration when edits are pending, else the running one.
func (n *nodeNet) view() map[string]*iface {
	if n.Staged != nil {
		return n.Staged
	}
	return n.Running
}

// stage returns the staged map, copying the running config on first edit.
func (n *nodeNet) stage() map[string]*iface {
	n.StagedAt = time.Now().Unix()
	if n.Staged == nil {
		n.Staged = map[string]*iface{}
		for k, i := range n.Running {
			c := *i
			n.Staged[k] = &c
		}
	}
	return n.Staged
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
	}
	return i.Type == filter
}

func (s *Server) listNetwork(q *request) (any, error) {
	n := s.st.Net[q.vars["node"]]
	out := []map[string]any{}
	for p, i := range ordered(n.view()) {
		// PVE does not list the loopback device.
		if i.Type == "loopback" || !matchType(q.get("type"), i) {
			continue
		}
		// Bridges the caller may not use or audit are left out (pve-manager
		// API2/Network.pm index); the staged changes are shown to all.
		if (i.Type == "bridge" || i.Type == "OVSBridge") && !s.canSeeBridge(q.user, i.Name) {
			continue
		}
		_, running := n.Running[i.Name]
		out = append(out, i.item(running && (i.Autostart || i.Type == "eth" || i.Type == "loopback"), p+1))
	}
	if ch := n.changes(s.st.Boot[q.vars["node"]]); ch != "" {
		return withTop{data: out, top: map[string]any{"changes": ch}}, nil
	}
	return out, nil
}

func (s *Server) getIface(q *request) (any, error) {
	n := s.st.Net[q.vars["node"]]
	name := q.vars["iface"]
	for p, i := range ordered(n.view()) {
		if i.Name == name {
			_, running := n.Running[name]
			return i.item(running && (i.Autostart || i.Type == "eth" || i.Type == "loopback"), p+1), nil
		}
	}
	return nil, paramErr1("iface", "interface does not exist")
}

func (s *Server) createIface(q *request) (any, error) {
	n := s.st.Net[q.vars["node"]]
	name := q.get("iface")
	if _, exists := n.view()[name]; exists {
		return nil, paramErr1("iface", "interface already exists")
	}
	return nil, stageIface(q, n, name, nil)
}

// stageIface builds an interface from the request (over old, for an update),
// checks its ports and stages it.
func stageIface(q *request, n *nodeNet, name string, old *iface) error {
	i, err := ifaceFromParams(q, name, old)
	if err != nil {
		return err
	}
	if err := checkPorts(n.view(), i); err != nil {
		return err
	}
	n.stage()[name] = i
	return nil
}

func (s *Server) updateIface(q *request) (any, error) {
	n := s.st.Net[q.vars["node"]]
	name := q.vars["iface"]
	old, ok := n.view()[name]
	if !ok {
		return nil, paramErr1("iface", "interface does not exist")
	}
	return nil, stageIface(q, n, name, old)
}

func (s *Server) deleteIface(q *request) (any, error) {
	n := s.st.Net[q.vars["node"]]
	name := q.vars["iface"]
	if _, ok := n.view()[name]; !ok {
		return nil, paramErr1("iface", "interface does not exist")
	}
	delete(n.stage(), name)
	return nil, nil
}

func (s *Server) revertNetwork(q *request) (any, error) {
	n := s.st.Net[q.vars["node"]]
	n.Staged, n.StagedAt = nil, 0
	return nil, nil
}

func (s *Server) applyNetwork(q *request) (any, error) {
	node := q.vars["node"]
	return s.startTask(node, "srvreload", "networking", nil, func(t *task) error {
		n := s.st.Net[node]
		if n.Staged != nil {
			n.Running, n.Staged = n.Staged, nil
			n.RunningAt, n.StagedAt = time.Now().Unix(), 0
		}
		t.logf("reloading network config on node '%s'", node)
		return nil
	}), nil
}

// ifaceFromParams builds an interface from a POST, or applies a PUT to old
// the way pve-manager's update_network does: the keys in delete are removed,
// the keys sent overwrite, the keys not sent stay - except the methods, which
// are recomputed from whether an address was sent (so a PUT without cidr
// leaves a stale address under "method manual": send the full definition).
// The type is overwritten too; PVE does not refuse a change.
func ifaceFromParams(q *request, name string, old *iface) (*iface, error) {
	i := &iface{Name: name}
	if old != nil {
		c := *old
		i = &c
		for _, d := range schema.SplitList(q.get("delete")) {
			i.clear(d)
		}
	} else if q.get("type") == "eth" {
		return nil, paramErr1("type", "can't create physical interface '%s'", name)
	}
	i.Type = q.get("type")
	str := map[string]*string{"comments": &i.Comments, "comments6": &i.Comments6, "gateway": &i.Gateway,
		"gateway6": &i.Gateway6, "bond_mode": &i.BondMode, "bond-primary": &i.BondPrimary,
		"bond_xmit_hash_policy": &i.BondXmitHashPolicy, "vlan-raw-device": &i.VlanRawDevice}
	for k, f := range str {
		if q.has(k) {
			*f = q.get(k)
		}
	}
	// Lists are stored space separated, whatever separator was sent.
	lists := map[string]*string{"bridge_ports": &i.BridgePorts, "slaves": &i.Slaves, "bridge_vids": &i.BridgeVids}
	for k, f := range lists {
		if q.has(k) {
			*f = strings.Join(schema.SplitList(q.get(k)), " ")
		}
	}
	if q.has("autostart") {
		i.Autostart = q.bool("autostart")
	}
	if q.has("bridge_vlan_aware") {
		i.BridgeVlanAware = q.bool("bridge_vlan_aware")
	}
	if q.has("mtu") {
		i.MTU = q.int("mtu", 0)
	}
	if q.has("vlan-id") {
		i.VlanID = q.int("vlan-id", 0)
	}
	i.Method, i.Method6 = "manual", "manual"
	switch {
	case q.get("cidr") != "":
		if _, _, err := net.ParseCIDR(q.get("cidr")); err != nil {
			return nil, paramErr1("cidr", "invalid format - value does not look like a valid IPv4 network configuration")
		}
		i.CIDR, i.Method = q.get("cidr"), "static"
	case q.get("address") != "":
		ip := net.ParseIP(q.get("address"))
		mask := net.ParseIP(q.get("netmask"))
		if ip == nil || mask == nil {
			return nil, paramErr1("netmask", "address and netmask are required together")
		}
		ones, _ := net.IPMask(mask.To4()).Size()
		i.CIDR, i.Method = fmt.Sprintf("%s/%d", ip, ones), "static"
	}
	switch {
	case q.get("cidr6") != "":
		i.CIDR6, i.Method6 = q.get("cidr6"), "static"
	case q.get("address6") != "":
		i.CIDR6, i.Method6 = fmt.Sprintf("%s/%s", q.get("address6"), orDefault(q.get("netmask6"), "64")), "static"
	}
	if i.Gateway != "" && i.CIDR == "" {
		return nil, paramErr1("gateway", "gateway needs an address (cidr)")
	}
	if i.Type == "bond" && i.BondMode == "" {
		i.BondMode = "balance-rr"
	}
	if i.Type == "vlan" && i.VlanID == 0 {
		if dev, id, ok := strings.Cut(name, "."); ok {
			if n, err := strconv.Atoi(id); err == nil && i.VlanRawDevice == "" {
				i.VlanRawDevice, i.VlanID = dev, n
			}
		}
	}
	i.normalize()
	return i, nil
}

// clear removes one setting named as in the API (PUT's delete list).
func (i *iface) clear(key string) {
	switch key {
	case "cidr", "address", "netmask":
		i.CIDR = ""
	case "cidr6", "address6", "netmask6":
		i.CIDR6 = ""
	case "gateway":
		i.Gateway = ""
	case "gateway6":
		i.Gateway6 = ""
	case "comments":
		i.Comments = ""
	case "comments6":
		i.Comments6 = ""
	case "mtu":
		i.MTU = 0
	case "autostart":
		i.Autostart = false
	case "bridge_ports":
		i.BridgePorts = ""
	case "bridge_vlan_aware":
		i.BridgeVlanAware = false
	case "bridge_vids":
		i.BridgeVids = ""
	case "slaves":
		i.Slaves = ""
	case "bond_mode":
		i.BondMode = ""
	case "bond-primary":
		i.BondPrimary = ""
	case "bond_xmit_hash_policy":
		i.BondXmitHashPolicy = ""
	case "vlan-id":
		i.VlanID = 0
	case "vlan-raw-device":
		i.VlanRawDevice = ""
	}
}

// checkPorts enforces that bridge ports and bond slaves exist and are not
// enslaved elsewhere.
func checkPorts(cfg map[string]*iface, i *iface) error {
	param, ports := "bridge_ports", i.BridgePorts
	if i.Type == "bond" {
		param, ports = "slaves", i.Slaves
	}
	for _, p := range strings.Fields(ports) {
		if base, _, ok := strings.Cut(p, "."); ok {
			if _, exists := cfg[base]; exists {
				continue // a VLAN on an existing port is created on the fly
			}
		}
		if _, exists := cfg[p]; !exists {
			return paramErr1(param, "interface '%s' does not exist", p)
		}
		for _, other := range cfg {
			if other.Name == i.Name {
				continue
			}
			for _, used := range strings.Fields(other.BridgePorts + " " + other.Slaves) {
				if used == p {
					return paramErr1(param, "interface '%s' is already used by '%s'", p, other.Name)
				}
			}
		}
	}
	return nil
}
