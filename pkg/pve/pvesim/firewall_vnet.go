package pvesim

import (
	"fmt"
	"strings"
)

// The SDN vnet firewall (pve-firewall src/PVE/API2/Firewall/Vnet.pm and
// Rules.pm VnetRules): options and rules of sdn/firewall/<vnet>.fw, env
// "vnet" (forward rules and groups). Every call first does
// Helpers.pm check_vnet_access: the vnet must be in the running SDN
// config (get_vnet with running: a vnet only in the files is "invalid
// vnet specified", a die, 500), and the caller needs one of the
// privileges on /sdn/zones/<zone>/<vnet> — SDN.Audit or SDN.Allocate to
// read, SDN.Allocate to write.

func vnetScope(q *request) fwScope {
	return fwScope{env: "vnet", file: "sdn/firewall/" + q.vars["vnet"] + ".fw"}
}

// vnetFWChecked runs h after check_vnet_access with privs.
func (s *Server) vnetFWChecked(h handler, privs ...string) handler {
	return func(q *request) (any, error) {
		vnet := q.vars["vnet"]
		v := s.sdnRead().running("vnets")[vnet]
		if v == nil {
			return nil, die500(fmt.Errorf("invalid vnet specified"))
		}
		if err := s.checkAny(q.user, "/sdn/zones/"+v.Opts["zone"]+"/"+vnet, privs...); err != nil {
			return nil, err
		}
		return h(q)
	}
}

// vnetFirewallRoutes are Vnet.pm's options and VnetRules'
// rule calls, each behind check_vnet_access.
func (s *Server) vnetFirewallRoutes() []route {
	const base = "/cluster/sdn/vnets/{vnet}/firewall"
	read := []string{"SDN.Audit", "SDN.Allocate"}
	// The index (GET base) has no permissions in PVE's schema: root@pam's
	// only, which no token is; it is not served.
	rs := []route{
		r("GET "+base+"/options", s.vnetFWChecked(s.fwGetOptions(vnetScope), read...)),
		r("PUT "+base+"/options", s.vnetFWChecked(s.fwPutOptions(vnetScope), "SDN.Allocate")),
	}
	for _, rt := range s.fwRuleRoutes(base+"/rules", "/{pos}", vnetScope) {
		privs := []string{"SDN.Allocate"}
		if strings.HasPrefix(rt.key, "GET ") {
			privs = read
		}
		rt.h = s.vnetFWChecked(rt.h, privs...)
		rs = append(rs, rt)
	}
	return rs
}
