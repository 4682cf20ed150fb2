package pvesim

import (
	"fmt"
	"maps"
	"slices"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// SDN controllers: pve-network src/PVE/API2/Network/SDN/Controllers.pm
// and src/PVE/Network/SDN/Controllers/{Evpn,Bgp,Isis,Faucet}Plugin.pm.
// Nothing runs FRR here: a controller is configuration only.

// listSDNControllers is index: the controllers the caller may audit or
// allocate on /sdn/controllers/<id>, of one type if asked.
func (s *Server) listSDNControllers(q *request) (any, error) {
	return s.sdnTypedList(q, sdnClasses()["controllers"]), nil
}

func (s *Server) getSDNController(q *request) (any, error) {
	return s.sdnGet(q, sdnClasses()["controllers"], q.vars["controller"])
}

// createSDNController is create: check_config before the lock, then a
// new id and the plugin's on_update_hook.
func (s *Server) createSDNController(q *request) (any, error) {
	return nil, s.sdnTypedCreate(q, sdnClasses()["controllers"], func(d *sdnState, id string, sec *sdnSection) error {
		files := d.Files.clone()
		files["controllers"][id] = sec
		if err := s.controllerUpdateHook(files["controllers"], id); err != nil {
			return err
		}
		d.add("controllers", id, sec)
		return nil
	})
}

// controllerUpdateHook is the plugin's on_update_hook: one evpn
// controller in the cluster, with exactly one of peers and fabric; bgp
// and isis count the other controllers of their type on the node
// answering (PVE's condition lets a second one through and refuses a
// third: `$controllernb > 1`).
func (s *Server) controllerUpdateHook(f sdnFile, id string) error {
	c := f[id]
	count := 0
	for _, other := range slices.Sorted(maps.Keys(f)) {
		o := f[other]
		if other == id || o.Type != c.Type {
			continue
		}
		switch c.Type {
		case "evpn":
			return fmt.Errorf("only 1 global evpn controller can be defined")
		case "bgp", "isis":
			if o.Opts["node"] != s.st.Nodes[0] {
				continue
			}
			if count++; count > 1 && c.Type == "bgp" {
				return fmt.Errorf("only 1 bgp controller can be defined")
			} else if count > 1 {
				return fmt.Errorf("only 1 bgp or isis controller can be defined")
			}
		}
	}
	if c.Type == "evpn" && (c.Opts["peers"] != "") == (c.Opts["fabric"] != "") {
		return fmt.Errorf("must have exactly one of peers / fabric defined")
	}
	return nil
}

// updateSDNController is update, all under the lock: digest, the
// controller, check_config, deletes and sets, the hook.
func (s *Server) updateSDNController(q *request) (any, error) {
	c := sdnClasses()["controllers"]
	id := q.vars["controller"]
	return nil, s.sdnLocked(q.get("lock-token"), "update sdn controller object failed", func(d *sdnState) error {
		_, opts, err := sdnTypedUpdateStart(d, c, q, id)
		if err != nil {
			return err
		}
		f := d.Files["controllers"].clone()
		if err := c.apply(f[id], opts, schema.SplitList(q.get("delete"))); err != nil {
			return err
		}
		if err := s.controllerUpdateHook(f, id); err != nil {
			return err
		}
		d.Files["controllers"][id] = f[id]
		return nil
	})
}

// deleteSDNController is delete: an evpn or bgp controller a zone of
// the files names stays.
func (s *Server) deleteSDNController(q *request) (any, error) {
	id := q.vars["controller"]
	return nil, s.sdnLocked(q.get("lock-token"), "delete sdn controller object failed", func(d *sdnState) error {
		c := d.Files["controllers"][id]
		if c == nil {
			return sdnMissing("controllers", id)
		}
		if c.Type == "evpn" || c.Type == "bgp" {
			zones := d.Files["zones"]
			for _, z := range slices.Sorted(maps.Keys(zones)) {
				if zones[z].Opts["controller"] == id {
					return fmt.Errorf("controller %s is used by %s", id, z)
				}
			}
		}
		delete(d.Files["controllers"], id)
		return nil
	})
}
