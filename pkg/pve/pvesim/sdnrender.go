package pvesim

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// A node's /etc/network/interfaces.d/sdn as pve-network writes it
// (src/PVE/Network/SDN/Zones.pm generate_etc_network_config and the zone
// plugins' generate_sdn_config), what `GET /cluster/sdn/dry-run` diffs
// and what decides which vnets a reload brings up. EVPN zones need FRR
// and a VRF per zone: their vnets are brought up, but their stanzas are
// not rendered (nor is any FRR config: dry-run has no frr-diff).

// sdnRender is one node's generated file from cfg: per interface its
// option lines, the vnets up, and the warnings of vnets left out.
type sdnRender struct {
	ifaces map[string][]string
	up     map[string]sdnUp
	warns  []string
}

// renderSDN generates cfg (committed with version) on node, whose
// devices are its interfaces as they are up before ifreload.
func renderSDN(cfg sdnConfig, node string, devices map[string]*iface) *sdnRender {
	r := &sdnRender{ifaces: map[string][]string{}, up: map[string]sdnUp{}}
	for _, id := range slices.Sorted(maps.Keys(cfg["vnets"])) {
		v := cfg["vnets"][id]
		zoneID := v.Opts["zone"]
		z := cfg["zones"][zoneID]
		switch {
		case zoneID == "":
			r.warns = append(r.warns, fmt.Sprintf("can't generate vnet '%s': no zone assigned!", id))
			continue
		case z == nil:
			r.warns = append(r.warns, fmt.Sprintf("can't generate vnet '%s': zone %s don't exist", id, zoneID))
			continue
		case !zoneOnNode(z, node):
			continue
		}
		if err := r.zone(cfg, z, zoneID, id, v, devices); err != "" {
			r.warns = append(r.warns, fmt.Sprintf("zone %s : vnet %s : %s", zoneID, id, err))
			continue
		}
		r.up[id] = sdnUp{Zone: zoneID, VlanAware: v.Opts["vlanaware"] == "1"}
	}
	return r
}

// text is the file: a version line, then each interface, sorted.
func (r *sdnRender) text(version int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#version:%d\n", version)
	for _, name := range slices.Sorted(maps.Keys(r.ifaces)) {
		fmt.Fprintf(&b, "\nauto %s\niface %s\n", name, name)
		for _, o := range r.ifaces[name] {
			fmt.Fprintf(&b, "\t%s\n", o)
		}
	}
	return b.String()
}

// set gives an interface its lines unless another vnet did already.
func (r *sdnRender) set(name string, lines ...string) {
	if _, done := r.ifaces[name]; !done {
		r.ifaces[name] = lines
	}
}

// zone runs the zone plugin's generate_sdn_config for one vnet; the
// message is its die.
func (r *sdnRender) zone(cfg sdnConfig, z *sdnSection, zoneID, id string, v *sdnSection, devices map[string]*iface) string {
	switch z.Type {
	case "simple":
		r.simple(cfg, z, id, v, devices)
	case "vlan":
		br := devices[z.Opts["bridge"]]
		if br == nil || br.Type != "bridge" {
			return "can't find bridge " + z.Opts["bridge"]
		}
		r.vlan(z, id, v, br, devices)
	case "qinq":
		br := devices[z.Opts["bridge"]]
		if br == nil || br.Type != "bridge" {
			return "can't find bridge " + z.Opts["bridge"]
		}
		r.qinq(z, zoneID, id, v, br, devices)
	case "vxlan":
		if v.Opts["tag"] == "" {
			return "missing vxlan tag"
		}
		if z.Opts["peers"] == "" {
			return fmt.Sprintf("could not configure VXLAN zone %s: fabric is not simulated", zoneID)
		}
		r.vxlan(z, id, v, devices)
	case "evpn":
		if v.Opts["tag"] == "" {
			return "missing vxlan tag"
		}
		if cfg["controllers"][z.Opts["controller"]] == nil {
			return "missing controller"
		}
	}
	return ""
}

// vnetBridge are a vnet bridge's lines after its ports (every plugin's
// "vnet bridge" block).
func vnetBridge(ports, mtu string, v *sdnSection) []string {
	lines := []string{"bridge_ports " + ports, "bridge_stp off", "bridge_fd 0"}
	if v.Opts["vlanaware"] == "1" {
		lines = append(lines, "bridge-vlan-aware yes", "bridge-vids 2-4094")
	}
	if mtu != "" {
		lines = append(lines, "mtu "+mtu)
	}
	if a := v.Opts["alias"]; a != "" {
		lines = append(lines, "alias "+a)
	}
	return lines
}

// simple is SimplePlugin: the subnets' gateways as addresses, a /32
// route, SNAT through the node's default route, forwarding.
func (r *sdnRender) simple(cfg sdnConfig, z *sdnSection, id string, v *sdnSection, devices map[string]*iface) {
	if _, done := r.ifaces[id]; done {
		return
	}
	var lines []string
	seen := map[string]bool{}
	fwd4, fwd6 := false, false
	for _, sid := range subnetsOf(cfg, id) {
		s := cfg["subnets"][sid]
		f := strings.Split(sid, "-")
		cidr, mask := f[1]+"/"+f[2], f[2]
		gw := s.Opts["gateway"]
		if gw != "" && !seen[gw] {
			lines = append(lines, "address "+gw+"/"+mask)
			seen[gw] = true
		}
		v6 := strings.Contains(gw, ":")
		fwd6, fwd4 = fwd6 || (v6 && gw != ""), fwd4 || (!v6 && gw != "")
		if mask == "32" && !v6 {
			lines = append(lines, "up ip route add "+cidr+" dev "+id)
		}
		if s.Opts["snat"] == "1" {
			lines = append(lines, snatLines(cidr, v6, devices)...)
		}
	}
	lines = append(lines, vnetBridge("none", z.Opts["mtu"], v)...)
	if fwd4 {
		lines = append(lines, "ip-forward on")
	}
	if fwd6 {
		lines = append(lines, "ip6-forward on")
	}
	r.ifaces[id] = lines
}

// snatLines are SimplePlugin's SNAT rules through the interface of the
// node's default route (get_local_route_ip of a public address: here
// the interface with the gateway, no packet sent).
func snatLines(cidr string, v6 bool, devices map[string]*iface) []string {
	ipt := "iptables"
	if v6 {
		ipt = "ip6tables"
	}
	for _, name := range slices.Sorted(maps.Keys(devices)) {
		d := devices[name]
		gw, addr := d.Gateway, d.CIDR
		if v6 {
			gw, addr = d.Gateway6, d.CIDR6
		}
		if gw == "" || addr == "" {
			continue
		}
		ip, _, _ := strings.Cut(addr, "/")
		rule := fmt.Sprintf("-s '%s' -o %s -j SNAT --to-source %s", cidr, name, ip)
		return []string{
			"post-up " + ipt + " -t nat -A POSTROUTING " + rule,
			"post-down " + ipt + " -t nat -D POSTROUTING " + rule,
			"post-up " + ipt + " -t raw -I PREROUTING -i fwbr+ -j CT --zone 1",
			"post-down " + ipt + " -t raw -D PREROUTING -i fwbr+ -j CT --zone 1",
		}
	}
	return nil
}

// physicalPorts are a bridge's ports that are NICs
// (IPRoute2::get_physical_bridge_ports).
func physicalPorts(br *iface, devices map[string]*iface) []string {
	var out []string
	for _, p := range strings.Fields(br.BridgePorts) {
		if d := devices[p]; d != nil && d.Type == "eth" {
			out = append(out, p)
		}
	}
	return out
}

// vlan is VlanPlugin on a Linux bridge: on a VLAN-aware bridge the vnet
// takes bridge.tag; else a vmbrXvY bridge of the NICs' VLAN devices
// joined to the vnet by a veth pair.
func (r *sdnRender) vlan(z *sdnSection, id string, v *sdnSection, br *iface, devices map[string]*iface) {
	tag, mtu := v.Opts["tag"], z.Opts["mtu"]
	uplink, peer := "ln_"+id, "pr_"+id
	withMTU := func(lines ...string) []string {
		if mtu != "" {
			lines = append(lines, "mtu "+mtu)
		}
		return lines
	}
	if br.BridgeVlanAware {
		uplink = br.Name + "." + tag
	} else {
		ports := ""
		for _, p := range physicalPorts(br, devices) {
			ports += " " + p + "." + tag
		}
		r.set(uplink, withMTU("link-type veth", "veth-peer-name "+peer)...)
		r.set(peer, withMTU("link-type veth", "veth-peer-name "+uplink)...)
		r.set(br.Name+"v"+tag, withMTU("bridge_ports "+ports+" "+peer, "bridge_stp off", "bridge_fd 0")...)
	}
	r.set(id, vnetBridge(uplink, mtu, v)...)
}

// qinq is QinQPlugin on a Linux bridge: a VLAN-aware zone bridge z_<zone>
// on the service VLAN (bridge.stag on a VLAN-aware bridge, else a
// sv_<zone> VLAN device of its first NIC), a veth pair for the tag-less
// vnet, the vnet on z_<zone>.ctag.
func (r *sdnRender) qinq(z *sdnSection, zoneID, id string, v *sdnSection, br *iface, devices map[string]*iface) {
	stag, mtu, proto := z.Opts["tag"], z.Opts["mtu"], z.Opts["vlan-protocol"]
	uplink, peer, zone := "ln_"+zoneID, "pr_"+zoneID, "z_"+zoneID
	ports := peer
	if ctag := v.Opts["tag"]; ctag != "" {
		ports = zone + "." + ctag
	}
	zonePorts := ""
	if br.BridgeVlanAware {
		zonePorts = br.Name + "." + stag
		if proto != "" {
			r.set(br.Name, "bridge-vlan-protocol "+proto)
			r.set(zonePorts, "vlan-protocol "+proto)
		}
	} else if nics := physicalPorts(br, devices); len(nics) > 0 {
		sv := "sv_" + zoneID
		lines := []string{"vlan-raw-device " + nics[0], "vlan-id " + stag}
		if proto != "" {
			lines = append(lines, "vlan-protocol "+proto)
		}
		r.set(sv, lines...)
		zonePorts = sv
	}
	r.set(uplink, "link-type veth", "veth-peer-name "+peer)
	r.set(peer, "link-type veth", "veth-peer-name "+uplink)
	var zl []string
	if mtu != "" {
		zl = append(zl, "mtu "+mtu)
	}
	r.set(zone, append(zl, "bridge-stp off", "bridge-ports "+zonePorts+" "+uplink, "bridge-fd 0",
		"bridge-vlan-aware yes", "bridge-vids 2-4094")...)
	r.set(id, vnetBridge(ports, mtu, v)...)
}

// vxlan is VxlanPlugin with peers: a vxlan_<vnet> device to every peer
// but the node's own address (find_local_ip_interface_peers: the
// interface holding a peer's address), MTU 1450 or the uplink's less 50.
func (r *sdnRender) vxlan(z *sdnSection, id string, v *sdnSection, devices map[string]*iface) {
	peers := schema.SplitList(z.Opts["peers"])
	local, mtu := "", 1450
	for _, name := range slices.Sorted(maps.Keys(devices)) {
		ip, _, _ := strings.Cut(devices[name].CIDR, "/")
		if ip != "" && slices.Contains(peers, ip) {
			local = ip
			if m := devices[name].MTU; m > 0 {
				mtu = m - 50
			}
			break
		}
	}
	m := strconv.Itoa(mtu)
	if z.Opts["mtu"] != "" {
		m = z.Opts["mtu"]
	}
	lines := []string{"vxlan-id " + v.Opts["tag"]}
	for _, p := range peers {
		if a, err := netip.ParseAddr(p); err == nil && a.String() != local {
			lines = append(lines, "vxlan_remoteip "+p)
		}
	}
	if port := z.Opts["vxlan-port"]; port != "" {
		lines = append(lines, "vxlan-port "+port)
	}
	r.set("vxlan_"+id, append(lines, "mtu "+m)...)
	r.set(id, vnetBridge("vxlan_"+id, m, v)...)
}

// sdnDryRun is SDN.pm dry-run on node: the files compiled as the next
// commit would (with the running version: compile_running_cfg(1)), the
// node's file diffed against it (`diff -b -N -u`; no key when equal).
func (s *Server) sdnDryRun(q *request) (any, error) {
	node := q.get("node")
	d := s.sdnRead()
	version := 1
	if d.Running != nil {
		version = d.Running.Version
	}
	cur, at := "", int64(0)
	if n := d.Nodes[node]; n != nil {
		cur, at = n.Text, n.At
	}
	next := renderSDN(d.Files, node, s.st.Net[node].Running).text(version)
	out := map[string]any{}
	stamp := func(unix int64) string { return time.Unix(unix, 0).Format("2006-01-02 15:04:05.000000000 -0700") }
	// The new file is an O_TMPFILE (pve-common File.pm tempfile_contents).
	if diff := unifiedDiff("/etc/network/interfaces.d/sdn\t"+stamp(at), "/proc/self/fd/7\t"+stamp(time.Now().Unix()), cur, next); diff != "" {
		out["interfaces-diff"] = diff
	}
	return out, nil
}
