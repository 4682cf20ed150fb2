package pvesim

import (
	"maps"
	"slices"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// The nodes' side of SDN. A node's /etc/network/interfaces.d/sdn is
// generated from the running config by every network reload of that
// node (pve-manager PVE/API2/Network.pm reload_network_config:
// PVE::Network::SDN::generate_etc_network_config, then `ifreload -a`),
// whether `PUT /cluster/sdn` or `PUT /nodes/{node}/network` started it;
// only then are the vnets bridges on that node. Status, the local vnets
// and a guest's NIC on a vnet read this.

// sdnNodeState is what a node generated: the running config's version
// and the vnets it brought up.
type sdnNodeState struct {
	Version int              `json:"version"`
	Vnets   map[string]sdnUp `json:"vnets,omitempty"`
	Text    string           `json:"text,omitempty"` // the file
	At      int64            `json:"at,omitempty"`   // when it was written
}

// sdnUp is a vnet bridge on a node.
type sdnUp struct {
	Zone      string `json:"zone"`
	VlanAware bool   `json:"vlanaware,omitempty"`
}

func (s *Server) sdnNodeRoutes() []route {
	return []route{
		r("GET /nodes/{node}/sdn", s.nodeSDNIndex),
		r("GET /nodes/{node}/sdn/zones", s.nodeSDNZones),
		r("GET /nodes/{node}/sdn/zones/{zone}", s.nodeSDNZoneIndex),
		r("GET /nodes/{node}/sdn/zones/{zone}/content", s.nodeSDNZoneContent),
		r("GET /cluster/sdn/dry-run", s.sdnDryRun),
	}
}

// sdnGenerate is generate_etc_network_config on node, in its reload
// worker, before ifreload: the file rendered from the running config
// (sdnrender.go); a vnet whose zone plugin fails there (a vlan zone's
// bridge missing: Zones/Plugin.pm find_bridge) is a warning in the log
// and is left out. devices are the node's interfaces before the reload.
func (s *Server) sdnGenerate(node string, devices map[string]*iface, t *task) {
	if s.sdnRead().Running == nil {
		return
	}
	d := s.sdn()
	r := renderSDN(d.Running.Config, node, devices)
	for _, w := range r.warns {
		t.logf("%s", w)
	}
	d.Nodes[node] = &sdnNodeState{Version: d.Running.Version, Vnets: r.up,
		Text: r.text(d.Running.Version), At: time.Now().Unix()}
}

// zoneOnNode is a zone's `nodes` (none: every node).
func zoneOnNode(z *sdnSection, node string) bool {
	nodes := z.Opts["nodes"]
	return nodes == "" || slices.Contains(schema.SplitList(nodes), node)
}

// sdnBridge tells whether br is a vnet of the running config (PVE then
// plugs a NIC through the zone plugin: Zones.pm tap_create, tap_plug)
// and, if so, why a NIC on it cannot be plugged on node: its bridge is
// not up there (pve-common Network.pm read_bridge_mtu, "bridge 'x' does
// not exist"), or the NIC has a tag or trunks and the vnet is not
// VLAN-aware (Zones/Plugin.pm tap_plug). A vnet only in the files is no
// vnet yet: the classic bridge check applies to it.
func (s *Server) sdnBridge(node, br, nic string) (isVnet bool, msg string) {
	d := s.sdnRead()
	if d.Running == nil || d.Running.Config["vnets"][br] == nil {
		return false, ""
	}
	up, ok := d.Nodes[node].vnet(br)
	if !ok {
		return true, "bridge '" + br + "' does not exist"
	}
	kv := props(nic)
	_, tag := schema.PropValue(kv, "tag")
	_, trunks := schema.PropValue(kv, "trunks")
	if !up.VlanAware && (tag || trunks) {
		return true, "vm vlans are not allowed on vnet " + br
	}
	return true, ""
}

func (n *sdnNodeState) vnet(id string) (sdnUp, bool) {
	if n == nil {
		return sdnUp{}, false
	}
	up, ok := n.Vnets[id]
	return up, ok
}

// sdnLocalVnets is get_local_vnets for `GET /nodes/{node}/network` with
// type any_bridge, include_sdn or vnet: the running config's vnets
// whose zone includes the node and that the caller may audit or use
// (check_sdn_bridge), as pve-manager adds them (type `vnet`, `active`,
// `ipam`, `vlanaware`, `comments` from the alias).
func (s *Server) sdnLocalVnets(user, node, filter string) []map[string]any {
	d := s.sdnRead()
	if d.Running == nil || (filter != "any_bridge" && filter != "include_sdn" && filter != "vnet") {
		return nil
	}
	run := d.Running.Config
	var out []map[string]any
	for _, id := range slices.Sorted(maps.Keys(run["vnets"])) {
		v := run["vnets"][id]
		z := run["zones"][v.Opts["zone"]]
		if v.Opts["zone"] == "" || !s.canAny(user, "/sdn/zones/"+v.Opts["zone"]+"/"+id, "SDN.Audit", "SDN.Use") {
			continue
		}
		if z != nil && !zoneOnNode(z, node) {
			continue
		}
		row := map[string]any{"iface": id, "type": "vnet", "active": 1,
			"ipam": b2i(z != nil && z.Opts["ipam"] != ""), "vlanaware": b2i(v.Opts["vlanaware"] == "1")}
		if a := v.Opts["alias"]; a != "" {
			row["comments"] = a
		}
		out = append(out, row)
	}
	return out
}

// nodeSDNIndex is pve-manager PVE/API2/Network/SDN/Nodes... index:
// pve-network src/PVE/API2/Network/SDN/Nodes/Status.pm (zones, fabrics,
// vnets).
func (s *Server) nodeSDNIndex(*request) (any, error) {
	return []map[string]any{{"name": "zones"}, {"name": "fabrics"}, {"name": "vnets"}}, nil
}

// zoneStatus is Zones.pm status on node: nothing before the first
// commit; a zone of the running config on this node is `pending` while
// the node's generated config is older than the running one (or was
// never generated), else `available`, or `error` when one of its vnets
// could not be generated there.
func (s *Server) zoneStatus(node string) (zones map[string]string, vnets map[string]map[string]any) {
	d := s.sdnRead()
	if d.Running == nil {
		return nil, nil
	}
	run := d.Running.Config
	local := d.Nodes[node]
	errMsg := ""
	switch {
	case local == nil:
		errMsg = "local sdn network configuration is not yet generated, please reload"
	case local.Version < d.Running.Version:
		errMsg = "local sdn network configuration is too old, please reload"
	}
	zones, vnets = map[string]string{}, map[string]map[string]any{}
	for id, z := range run["zones"] {
		if zoneOnNode(z, node) {
			zones[id] = map[bool]string{true: "pending", false: "available"}[errMsg != ""]
		}
	}
	for id, v := range run["vnets"] {
		z := run["zones"][v.Opts["zone"]]
		switch {
		case v.Opts["zone"] == "":
		case z == nil:
			vnets[id] = map[string]any{"status": "error", "statusmsg": "unknown zone '" + v.Opts["zone"] + "' configured"}
		case !zoneOnNode(z, node):
		case errMsg != "":
			vnets[id] = map[string]any{"zone": v.Opts["zone"], "status": "pending", "statusmsg": errMsg}
		default:
			vnets[id] = map[string]any{"zone": v.Opts["zone"], "status": "available"}
			if _, up := local.vnet(id); !up {
				vnets[id]["status"] = "error"
				vnets[id]["statusmsg"] = "vnet is not generated. Please check the 'reload network' task log."
				zones[v.Opts["zone"]] = "error"
			}
		}
	}
	return zones, vnets
}

// nodeSDNZones is pve-network API2/Network/SDN/Nodes/Zones.pm index: the
// status of every zone on the node. Its description says "Only list
// entries where you have 'SDN.Audit'", but the code checks nothing
// (user => 'all', no check_any in the loop over Zones.pm status), so
// every caller sees every zone.
func (s *Server) nodeSDNZones(q *request) (any, error) {
	zones, _ := s.zoneStatus(q.vars["node"])
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(zones)) {
		out = append(out, map[string]any{"zone": id, "status": zones[id]})
	}
	return out, nil
}

// nodeSDNZoneIndex is Nodes/Zone.pm index.
func (s *Server) nodeSDNZoneIndex(*request) (any, error) {
	return []map[string]any{{"subdir": "content"}, {"subdir": "bridges"}, {"subdir": "ip-vrf"}}, nil
}

// nodeSDNZoneContent is Nodes/Zone.pm content: the zone's vnets with
// their status on the node.
func (s *Server) nodeSDNZoneContent(q *request) (any, error) {
	_, vnets := s.zoneStatus(q.vars["node"])
	zone := q.vars["zone"]
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(vnets)) {
		v := vnets[id]
		if v["zone"] != zone {
			continue
		}
		row := map[string]any{"vnet": id, "status": v["status"]}
		if m, ok := v["statusmsg"]; ok {
			row["statusmsg"] = m
		}
		out = append(out, row)
	}
	return out, nil
}

// sdnResources are /cluster/resources' network rows of node (PVE 9.1's
// pvestatd update_network_status; the older `sdn` rows are skipped for
// a node that sends these): the default zone `localnetwork` on every
// node, then each zone of the running config on the node with its
// status, for whom may audit /sdn/zones/<zone>.
func (s *Server) sdnResources(user string) []map[string]any {
	var out []map[string]any
	if s.can(user, "/sdn/zones/localnetwork", "SDN.Audit") {
		for _, n := range s.st.Nodes {
			out = append(out, map[string]any{"id": "network/" + n + "/zone/localnetwork", "type": "network",
				"network-type": "zone", "network": "localnetwork", "node": n, "status": "ok"})
		}
	}
	run := s.sdnRead().Running
	for _, n := range s.st.Nodes {
		zones, _ := s.zoneStatus(n)
		for _, id := range slices.Sorted(maps.Keys(zones)) {
			if !s.can(user, "/sdn/zones/"+id, "SDN.Audit") {
				continue
			}
			out = append(out, map[string]any{"id": "network/" + n + "/zone/" + id, "type": "network",
				"network-type": "zone", "network": id, "node": n, "status": zones[id],
				"zone-type": run.Config["zones"][id].Type})
		}
	}
	return out
}

// bridgeZone is the zone check_vnet_access (pve-guest-common
// GuestHelpers.pm) checks a NIC's bridge in: a vnet's zone in the SDN
// files, else `localnetwork`.
func (s *Server) bridgeZone(bridge string) string {
	if zone, ok := s.sdnVnet(bridge); ok {
		return zone
	}
	return "localnetwork"
}

// sdnVnet is a vnet of the SDN files and its zone, as
// PVE::Network::SDN::Vnets::get_vnet finds it (for other areas: the
// vnet firewall's checks).
func (s *Server) sdnVnet(name string) (zone string, ok bool) {
	v := s.sdnRead().Files["vnets"][name]
	if v == nil {
		return "", false
	}
	return v.Opts["zone"], true
}
