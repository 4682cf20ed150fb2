package pvesim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// SDN vnets: pve-network src/PVE/API2/Network/SDN/Vnets.pm,
// src/PVE/Network/SDN/VnetPlugin.pm and the zone plugins'
// vnet_update_hook (the tag rules of each zone type).

// checkVnetAccess is Vnets.pm check_vnet_access: the vnet must be in
// the files ("sdn vnet 'x' does not exist", a 500) and the caller hold
// one of privs on /sdn/zones/<zone>/<vnet>.
func (s *Server) checkVnetAccess(q *request, vnet string, privs ...string) error {
	v := s.sdnRead().Files["vnets"][vnet]
	if v == nil {
		return die500(sdnMissing("vnets", vnet))
	}
	return s.checkAny(q.user, "/sdn/zones/"+v.Opts["zone"]+"/"+vnet, privs...)
}

// listSDNVnets is index: the vnets the caller may audit or allocate on
// /sdn/zones/<zone>/<vnet> (a pending vnet by its pending zone).
func (s *Server) listSDNVnets(q *request) (any, error) {
	c := sdnClasses()["vnets"]
	v := s.sdnView(q, "vnets")
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(v.objs)) {
		o := c.object(id, v.objs[id], v.digest)
		zone, _ := o["zone"].(string)
		if p, ok := o["pending"].(map[string]any); ok && zone == "" {
			zone, _ = p["zone"].(string)
		}
		if s.canAny(q.user, "/sdn/zones/"+zone+"/"+id, "SDN.Audit", "SDN.Allocate") {
			out = append(out, o)
		}
	}
	return out, nil
}

func (s *Server) getSDNVnet(q *request) (any, error) {
	id := q.vars["vnet"]
	if err := s.checkVnetAccess(q, id, "SDN.Audit", "SDN.Allocate"); err != nil {
		return nil, err
	}
	return s.sdnGet(q, sdnClasses()["vnets"], id)
}

// createSDNVnet is create, under the lock: check_config, a new id, the
// zone plugin's vnet_update_hook (a zone that is not in the files has
// no plugin: lookup croaks), VnetPlugin's on_update_hook.
func (s *Server) createSDNVnet(q *request) (any, error) {
	c := sdnClasses()["vnets"]
	id := q.get("vnet")
	return nil, s.sdnLocked(q.get("lock-token"), "create sdn vnet object failed", func(d *sdnState) error {
		sec, err := c.check("vnet", sdnParams(q, "type", "vnet", "lock-token"), true)
		if err != nil {
			return err
		}
		if d.Files["vnets"][id] != nil {
			return fmt.Errorf("sdn vnet object ID '%s' already defined", id)
		}
		files := d.Files.clone()
		files["vnets"][id] = sec
		if err := vnetHooks(files, id); err != nil {
			return err
		}
		d.add("vnets", id, sec)
		return nil
	})
}

// vnetHooks are the zone plugin's vnet_update_hook and VnetPlugin's
// on_update_hook for vnet id in the files as they would be written.
func vnetHooks(files sdnConfig, id string) error {
	_, zone := zoneOf(files, id)
	if zone == nil {
		return fmt.Errorf("cannot lookup undefined type!")
	}
	if err := vnetTagRules(files, id, zone.Type); err != nil {
		return err
	}
	if files["vnets"][id].Opts["vlanaware"] == "1" && len(subnetsOf(files, id)) > 0 {
		return paramErr1("vlanaware", "vlanaware vnet is not compatible with subnets")
	}
	return nil
}

// vnetTagRules is vnet_update_hook of the zone type: a simple zone
// takes no tag; a vlan zone needs one up to 4096, once per zone; a qinq
// zone a tag up to 4096 once per zone, or one tag-less vnet; vxlan and
// evpn need a VNI unique over all vxlan and evpn zones, and an evpn
// vnet cannot be VLAN-aware.
func vnetTagRules(files sdnConfig, id, zoneType string) error {
	v := files["vnets"][id]
	tagStr, hasTag := v.Opts["tag"]
	tag, _ := strconv.Atoi(tagStr)
	others := slices.Sorted(maps.Keys(files["vnets"]))
	sameZone := func(o string) bool { return o != id && files["vnets"][o].Opts["zone"] == v.Opts["zone"] }
	switch zoneType {
	case "simple":
		if hasTag {
			return paramErr1("tag", "vlan tag is not allowed on simple zone")
		}
	case "vlan":
		if !hasTag {
			return paramErr1("tag", "missing vlan tag")
		}
		if tag > 4096 {
			return paramErr1("tag", "vlan tag max value is 4096")
		}
		for _, o := range others {
			if sameZone(o) && files["vnets"][o].Opts["tag"] == tagStr {
				return paramErr1("tag", "tag %s already exist in vnet %s", tagStr, o)
			}
		}
	case "qinq":
		if tag > 4096 {
			return paramErr1("tag", "VLAN tag maximal value is 4096")
		}
		for _, o := range others {
			other := files["vnets"][o].Opts["tag"]
			switch {
			case !sameZone(o):
			case hasTag && other == tagStr:
				return paramErr1("tag", "tag %s already exist in zone %s vnet %s", tagStr, v.Opts["zone"], o)
			case !hasTag && other == "":
				return paramErr1("tag", "tag-less vnet already exists in zone %s vnet %s", v.Opts["zone"], o)
			}
		}
	case "vxlan", "evpn":
		return vxlanTagRules(files, id, zoneType, hasTag, tag)
	}
	return nil
}

func vxlanTagRules(files sdnConfig, id, zoneType string, hasTag bool, tag int) error {
	v := files["vnets"][id]
	if !hasTag {
		return paramErr1("tag", "missing vxlan tag")
	}
	if tag > 16777216 {
		return paramErr1("tag", "vxlan tag max value is 16777216")
	}
	if zoneType == "evpn" && v.Opts["vlanaware"] == "1" {
		return paramErr1("vlan-aware", "vlan-aware option can't be enabled with evpn")
	}
	for _, o := range slices.Sorted(maps.Keys(files["vnets"])) {
		ov := files["vnets"][o]
		oz := files["zones"][ov.Opts["zone"]]
		if o == id || oz == nil || (oz.Type != "vxlan" && oz.Type != "evpn") {
			continue
		}
		if ov.Opts["tag"] == v.Opts["tag"] {
			return paramErr1("tag", "vxlan tag %s already exist in vnet %s in zone %s ", v.Opts["tag"], o, ov.Opts["zone"])
		}
	}
	return nil
}

// updateSDNVnet is update: SDN.Allocate on the vnet, then under the
// lock the digest, check_config, deletes and sets; the zone cannot go
// nor change while the vnet has subnets; then the hooks.
func (s *Server) updateSDNVnet(q *request) (any, error) {
	c := sdnClasses()["vnets"]
	id := q.vars["vnet"]
	if err := s.checkVnetAccess(q, id, "SDN.Allocate"); err != nil {
		return nil, err
	}
	return nil, s.sdnLocked(q.get("lock-token"), "update sdn vnet object failed", func(d *sdnState) error {
		if err := assertDigest(d.Files["vnets"], c, q.get("digest")); err != nil {
			return err
		}
		opts, err := c.check("vnet", sdnParams(q, "vnet", "digest", "delete", "lock-token"), false)
		if err != nil {
			return err
		}
		files := d.Files.clone()
		sec := files["vnets"][id]
		oldZone := sec.Opts["zone"]
		if err := c.apply(sec, opts, schema.SplitList(q.get("delete"))); err != nil {
			return err
		}
		if sec.Opts["zone"] == "" {
			return paramErr1("zone", "cannot delete zone")
		}
		if len(subnetsOf(files, id)) > 0 && oldZone != sec.Opts["zone"] {
			return paramErr1("zone", "can't change zone if subnets exist")
		}
		if err := vnetHooks(files, id); err != nil {
			return err
		}
		d.Files["vnets"][id] = sec
		return nil
	})
}

// deleteSDNVnet is delete: SDN.Allocate on the vnet; refused while the
// vnet has subnets (VnetPlugin on_delete_hook). Guests using it are not
// looked at.
func (s *Server) deleteSDNVnet(q *request) (any, error) {
	id := q.vars["vnet"]
	if err := s.checkVnetAccess(q, id, "SDN.Allocate"); err != nil {
		return nil, err
	}
	return nil, s.sdnLocked(q.get("lock-token"), "delete sdn vnet object failed", func(d *sdnState) error {
		if d.Files["vnets"][id] == nil {
			return sdnMissing("vnets", id)
		}
		if len(subnetsOf(d.Files, id)) > 0 {
			return paramErr1("vnet", "Can't delete vnet if subnets exists")
		}
		delete(d.Files["vnets"], id)
		return nil
	})
}
