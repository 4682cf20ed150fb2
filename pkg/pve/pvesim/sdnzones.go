package pvesim

import (
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// SDN zones: pve-network src/PVE/API2/Network/SDN/Zones.pm and the zone
// plugins src/PVE/Network/SDN/Zones/{Simple,Vlan,QinQ,Vxlan,Evpn,Faucet}Plugin.pm.

// listSDNZones is index: the zones the caller may audit or allocate on
// /sdn/zones/<zone>, of one type if asked.
func (s *Server) listSDNZones(q *request) (any, error) {
	return s.sdnTypedList(q, sdnClasses()["zones"]), nil
}

func (s *Server) getSDNZone(q *request) (any, error) {
	return s.sdnGet(q, sdnClasses()["zones"], q.vars["zone"])
}

// createSDNZone is create: the type's check_config before the lock (its
// dies unprefixed), then under it: a new id, the dns servers, ipam and
// the plugin's on_update_hook.
func (s *Server) createSDNZone(q *request) (any, error) {
	return nil, s.sdnTypedCreate(q, sdnClasses()["zones"], func(d *sdnState, id string, sec *sdnSection) error {
		if err := zoneRefs(sec); err != nil {
			return err
		}
		files := d.Files.clone()
		files["zones"][id] = sec
		if err := zoneUpdateHook(files, id, s.macPrefix()); err != nil {
			return err
		}
		d.add("zones", id, files["zones"][id])
		return nil
	})
}

// zoneRefs are the handlers' checks of what a zone names: dns and
// reversedns servers (none exist: the simulator serves no
// /cluster/sdn/dns), dnszone only with dns, an ipam that exists (the
// built-in `pve` always does: Ipams.pm config adds it).
func zoneRefs(sec *sdnSection) error {
	o := sec.Opts
	switch {
	case o["dns"] != "":
		return paramErr1("dns", "%s don't exist", o["dns"])
	case o["reversedns"] != "":
		return paramErr1("reversedns", "%s don't exist", o["reversedns"])
	case o["dnszone"] != "":
		return paramErr1("dnszone", "missing dns server")
	case o["ipam"] != "" && o["ipam"] != "pve":
		return paramErr1("ipam", "%s not existing", o["ipam"])
	}
	return nil
}

// zoneUpdateHook is the plugin's on_update_hook over the files as they
// would be written: a vxlan zone needs exactly one of peers and fabric,
// an evpn zone an evpn controller, a vrf-vxlan no other zone has, and
// gets an anycast mac with the datacenter's mac_prefix.
func zoneUpdateHook(files sdnConfig, id, macPrefix string) error {
	z := files["zones"][id]
	switch z.Type {
	case "vxlan":
		if (z.Opts["peers"] != "") == (z.Opts["fabric"] != "") {
			return paramErr(map[string]string{
				"peers":  "must have exactly one of peers / fabric defined",
				"fabric": "must have exactly one of peers / fabric defined",
			})
		}
	case "evpn":
		ctl := z.Opts["controller"]
		cs := files["controllers"][ctl]
		if cs == nil {
			return fmt.Errorf("controller %s don't exist", ctl)
		}
		if cs.Type != "evpn" {
			return fmt.Errorf("%s is not a evpn controller type", ctl)
		}
		vrf := z.Opts["vrf-vxlan"]
		for _, other := range slices.Sorted(maps.Keys(files["zones"])) {
			if other != id && files["zones"][other].Opts["vrf-vxlan"] == vrf {
				return fmt.Errorf("vrf-vxlan %s is already declared in %s", vrf, other)
			}
		}
		if z.Opts["mac"] == "" {
			z.Opts["mac"] = randomMAC(macPrefix)
		}
	}
	return nil
}

// macPrefix is datacenter.cfg's mac_prefix as EvpnPlugin.pm
// on_update_hook reads it (Zones/Plugin.pm datacenter_config): the
// parser's default, BC:24:11, when unset.
func (s *Server) macPrefix() string {
	if p := s.st.Datacenter["mac_prefix"]; p != "" {
		return p
	}
	return proxmoxOUI
}

// randomMAC is pve-common Tools.pm random_ether_addr(prefix): six random
// bytes (the first one unicast and locally administered), their
// leading characters replaced by the prefix, upper case.
func randomMAC(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefixedMAC(prefix, b)
}

// prefixedMAC is random_ether_addr's address of the six bytes b.
func prefixedMAC(prefix string, b [6]byte) string {
	b[0] = b[0]&0xfe | 2
	addr := fmt.Sprintf("%02X:%02X:%02X:%02X:%02X:%02X", b[0], b[1], b[2], b[3], b[4], b[5])
	if len(prefix) > len(addr) {
		prefix = prefix[:len(addr)]
	}
	return strings.ToUpper(prefix) + addr[len(prefix):]
}

// updateSDNZone is update, all under the lock: digest, the zone, the
// type's check_config, deletes then sets, no ipam change while a subnet
// is in the zone, the references and the plugin's hook.
func (s *Server) updateSDNZone(q *request) (any, error) {
	c := sdnClasses()["zones"]
	id := q.vars["zone"]
	return nil, s.sdnLocked(q.get("lock-token"), "update sdn zone object failed", func(d *sdnState) error {
		old, opts, err := sdnTypedUpdateStart(d, c, q, id)
		if err != nil {
			return err
		}
		files := d.Files.clone()
		sec := files["zones"][id]
		if err := c.apply(sec, opts, schema.SplitList(q.get("delete"))); err != nil {
			return err
		}
		if sec.Opts["ipam"] != old.Opts["ipam"] {
			for _, sid := range slices.Sorted(maps.Keys(files["subnets"])) {
				if subnetZone(sid) == id {
					return paramErr1("ipam", "can't change ipam if a subnet is already defined in this zone")
				}
			}
		}
		if err := zoneRefs(opts); err != nil {
			return err
		}
		if err := zoneUpdateHook(files, id, s.macPrefix()); err != nil {
			return err
		}
		d.Files["zones"][id] = sec
		return nil
	})
}

// deleteSDNZone is delete: refused while a vnet of the files names the
// zone (Zones/Plugin.pm on_delete_hook).
func (s *Server) deleteSDNZone(q *request) (any, error) {
	id := q.vars["zone"]
	return nil, s.sdnLocked(q.get("lock-token"), "delete sdn zone object failed", func(d *sdnState) error {
		if d.Files["zones"][id] == nil {
			return sdnMissing("zones", id)
		}
		vnets := d.Files["vnets"]
		for _, v := range slices.Sorted(maps.Keys(vnets)) {
			if vnets[v].Opts["zone"] == id {
				return fmt.Errorf("zone %s is used by vnet %s", id, v)
			}
		}
		delete(d.Files["zones"], id)
		return nil
	})
}

// zoneOf is the zone of a vnet in a file set ("" when the vnet or its
// zone is not there).
func zoneOf(files sdnConfig, vnet string) (string, *sdnSection) {
	v := files["vnets"][vnet]
	if v == nil {
		return "", nil
	}
	z := v.Opts["zone"]
	return z, files["zones"][z]
}
