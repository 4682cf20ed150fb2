package pvesim

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// SDN subnets: pve-network src/PVE/API2/Network/SDN/Subnets.pm,
// src/PVE/Network/SDN/SubnetPlugin.pm and src/PVE/Network/SDN/Subnets.pm.
// A subnet's id is "<zone>-<network>-<mask>" (the CIDR with its "/" a
// "-", after its vnet's zone). PVE refuses the same CIDR twice in a
// zone (the same id) but not overlapping ones: neither SubnetPlugin nor
// the built-in IPAM compares subnets (Ipams/PVEPlugin.pm add_subnet
// keeps a subnet per CIDR), so neither does the simulator.

// subnetCIDR is parse_sdn_subnet_id: a CIDR, or an id whose second and
// third "-" fields are network and mask; pve_verify_cidrv4/v6 accept a
// mask of 8 to 32 (128) and any address, not only the network's.
func subnetCIDR(id string) (netip.Prefix, error) {
	cidr := id
	if !strings.Contains(id, "/") {
		f := strings.Split(id, "-")
		for len(f) < 3 {
			f = append(f, "")
		}
		cidr = f[1] + "/" + f[2]
	}
	p, err := netip.ParsePrefix(cidr)
	if err != nil || p.Addr().Zone() != "" || p.Bits() < 8 || (p.Addr().Is4() && p.Bits() > 32) {
		return netip.Prefix{}, paramErr1("subnet", "value does not look like a valid CIDR network")
	}
	return p, nil
}

// subnetZone is the zone part of a subnet id.
func subnetZone(id string) string {
	z, _, _ := strings.Cut(id, "-")
	return z
}

// subnetsOf are the ids of the subnets of a vnet in a file set
// (Vnets.pm get_subnets).
func subnetsOf(files sdnConfig, vnet string) []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(files["subnets"])) {
		if files["subnets"][id].Opts["vnet"] == vnet {
			out = append(out, id)
		}
	}
	return out
}

// subnetObject is api_sdn_subnets_config: the section plus the id under
// `subnet` and `id`, its cidr, zone, network and mask
// (sdn_subnets_config), and `dhcp-range` parsed from the top level
// (get_dhcp_ranges: a list of start/end objects, empty when none).
func subnetObject(id string, o map[string]any, digest string) map[string]any {
	out := sdnClasses()["subnets"].object(id, o, digest)
	f := strings.Split(id, "-")
	for len(f) < 3 {
		f = append(f, "")
	}
	out["id"], out["zone"], out["network"], out["mask"] = id, f[0], f[1], f[2]
	out["cidr"] = f[1] + "/" + f[2]
	ranges := []map[string]any{}
	if raw, _ := o["dhcp-range"].(string); raw != "" {
		for _, r := range dhcpRanges(raw) {
			ranges = append(ranges, map[string]any{"start-address": r[0], "end-address": r[1]})
		}
	}
	out["dhcp-range"] = ranges
	if p, ok := out["pending"].(map[string]any); ok {
		if raw, ok := p["dhcp-range"].(string); ok && raw != "deleted" {
			p["dhcp-range"] = strings.Split(raw, "\n")
		}
	}
	return out
}

// dhcpRanges splits newline-joined dhcp-range lines into start/end
// pairs.
func dhcpRanges(raw string) [][2]string {
	var out [][2]string
	for _, line := range strings.Split(raw, "\n") {
		var r [2]string
		for _, kv := range props(line) {
			switch kv.Key {
			case "start-address":
				r[0] = kv.Value
			case "end-address":
				r[1] = kv.Value
			}
		}
		out = append(out, r)
	}
	return out
}

func (s *Server) listSDNSubnets(q *request) (any, error) {
	vnet := q.vars["vnet"]
	if err := s.checkVnetAccess(q, vnet, "SDN.Audit", "SDN.Allocate"); err != nil {
		return nil, err
	}
	v := s.sdnView(q, "subnets")
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(v.objs)) {
		if v.objs[id]["vnet"] == vnet {
			out = append(out, subnetObject(id, v.objs[id], v.digest))
		}
	}
	return out, nil
}

// getSDNSubnet is read: the subnet must belong to the vnet of the path
// (400 `vnet: wrong vnet`).
func (s *Server) getSDNSubnet(q *request) (any, error) {
	vnet, id := q.vars["vnet"], q.vars["subnet"]
	if _, err := subnetCIDR(id); err != nil {
		return nil, err
	}
	if err := s.checkVnetAccess(q, vnet, "SDN.Audit", "SDN.Allocate"); err != nil {
		return nil, err
	}
	v := s.sdnView(q, "subnets")
	o, ok := v.objs[id]
	if !ok {
		return nil, die500(sdnMissing("subnets", id))
	}
	if o["vnet"] != vnet {
		return nil, paramErr1("vnet", "wrong vnet")
	}
	return subnetObject(id, o, v.digest), nil
}

// createSDNSubnet is create: SDN.Allocate on the vnet, then under the
// lock the id from the vnet's zone and the CIDR, check_config, a new
// id, SubnetPlugin on_update_hook.
func (s *Server) createSDNSubnet(q *request) (any, error) {
	c := sdnClasses()["subnets"]
	vnet := q.vars["vnet"]
	prefix, err := subnetCIDR(q.get("subnet"))
	if err != nil {
		return nil, err
	}
	if err := s.checkVnetAccess(q, vnet, "SDN.Allocate"); err != nil {
		return nil, err
	}
	return nil, s.sdnLocked(q.get("lock-token"), "create sdn subnet object failed", func(d *sdnState) error {
		zone, _ := zoneOf(d.Files, vnet)
		id := zone + "-" + strings.Replace(q.get("subnet"), "/", "-", 1)
		sec, err := c.check("subnet", sdnParams(q, "type", "subnet", "lock-token"), true)
		if err != nil {
			return err
		}
		if d.Files["subnets"][id] != nil {
			return fmt.Errorf("sdn subnet object ID '%s' already defined", id)
		}
		if err := subnetUpdateHook(d.Files, prefix, sec); err != nil {
			return err
		}
		d.add("subnets", id, sec)
		return nil
	})
}

// subnetUpdateHook is SubnetPlugin on_update_hook: the vnet exists and
// is not VLAN-aware, the gateway is inside the subnet (an IPv4 /32 may
// have one outside: point-to-point), the DHCP ranges are valid.
func subnetUpdateHook(files sdnConfig, prefix netip.Prefix, sec *sdnSection) error {
	vnet := sec.Opts["vnet"]
	v := files["vnets"][vnet]
	if v == nil {
		return paramErr1("vnet", "%s don't exist", vnet)
	}
	if v.Opts["vlanaware"] == "1" {
		return paramErr1("vnet", "you can't add a subnet on a vlanaware vnet")
	}
	net := prefix.Masked()
	cidr := prefix.String()
	if gw := sec.Opts["gateway"]; gw != "" {
		a, err := netip.ParseAddr(gw)
		p2p := err == nil && a.Is4() && prefix.Bits() == 32
		if (err != nil || !net.Contains(a)) && !p2p {
			return paramErr1("gateway", "%s is not in subnet %s", gw, cidr)
		}
	}
	return checkDHCPRanges(net, cidr, sec.Ranges)
}

// checkDHCPRanges is validate_dhcp_ranges: each start and end a single
// address, start not after end, both inside the subnet, no two ranges
// overlapping.
func checkDHCPRanges(net netip.Prefix, cidr string, lines []string) error {
	type span struct{ a, b netip.Addr }
	var seen []span
	if len(lines) == 0 {
		return nil
	}
	for _, r := range dhcpRanges(strings.Join(lines, "\n")) {
		start, err := netip.ParseAddr(r[0])
		if err != nil {
			return paramErr1("dhcp-range", "start-address is not a valid IP %s", r[0])
		}
		end, err := netip.ParseAddr(r[1])
		if err != nil {
			return paramErr1("dhcp-range", "end-address is not a valid IP %s", r[1])
		}
		switch {
		case start.Compare(end) > 0:
			return paramErr1("dhcp-range", "start-address %s must be smaller than end-address %s", r[0], r[1])
		case !net.Contains(start):
			return paramErr1("dhcp-range", "start-address %s is not in subnet %s", r[0], cidr)
		case !net.Contains(end):
			return paramErr1("dhcp-range", "end-address %s is not in subnet %s", r[1], cidr)
		}
		for _, o := range seen {
			if start.Compare(o.b) <= 0 && o.a.Compare(end) <= 0 {
				return paramErr1("dhcp-range", "dhcp ranges must not overlap")
			}
		}
		seen = append(seen, span{start, end})
	}
	return nil
}

// updateSDNSubnet is update: SDN.Allocate on the path's vnet; under the
// lock the subnet, digest, check_config (the path's vnet is one of the
// options: it is written), deletes and sets, on_update_hook.
func (s *Server) updateSDNSubnet(q *request) (any, error) {
	c := sdnClasses()["subnets"]
	vnet, id := q.vars["vnet"], q.vars["subnet"]
	prefix, err := subnetCIDR(id)
	if err != nil {
		return nil, err
	}
	if err := s.checkVnetAccess(q, vnet, "SDN.Allocate"); err != nil {
		return nil, err
	}
	return nil, s.sdnLocked(q.get("lock-token"), "update sdn subnet object failed", func(d *sdnState) error {
		if d.Files["subnets"][id] == nil {
			return sdnMissing("subnets", id)
		}
		if err := assertDigest(d.Files["subnets"], c, q.get("digest")); err != nil {
			return err
		}
		opts, err := c.check("subnet", sdnParams(q, "subnet", "digest", "delete", "lock-token"), false)
		if err != nil {
			return err
		}
		sec := d.Files["subnets"][id].clone()
		if err := c.apply(sec, opts, schema.SplitList(q.get("delete"))); err != nil {
			return err
		}
		if err := subnetUpdateHook(d.Files, prefix, sec); err != nil {
			return err
		}
		d.Files["subnets"][id] = sec
		return nil
	})
}

// deleteSDNSubnet is delete: SDN.Allocate on the path's vnet; a subnet
// that is not there is no error (sdn_subnets_config with noerr) unless
// its zone has an IPAM, which finds no such zone.
func (s *Server) deleteSDNSubnet(q *request) (any, error) {
	vnet, id := q.vars["vnet"], q.vars["subnet"]
	if _, err := subnetCIDR(id); err != nil {
		return nil, err
	}
	if err := s.checkVnetAccess(q, vnet, "SDN.Allocate"); err != nil {
		return nil, err
	}
	return nil, s.sdnLocked(q.get("lock-token"), "delete sdn subnet object failed", func(d *sdnState) error {
		_, zone := zoneOf(d.Files, vnet)
		if d.Files["subnets"][id] == nil && zone != nil && zone.Opts["ipam"] != "" {
			return fmt.Errorf("zone '' doesn't exist in IPAM DB")
		}
		delete(d.Files["subnets"], id)
		return nil
	})
}
