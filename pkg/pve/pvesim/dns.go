package pvesim

import "slices"

func (s *Server) dnsRoutes() []route {
	return []route{
		r("GET /nodes/{node}/dns", s.getDNS),
		r("PUT /nodes/{node}/dns", s.putDNS),
	}
}

func (s *Server) getDNS(q *request) (any, error) {
	d := s.st.DNS[q.vars["node"]]
	m := map[string]any{}
	for k, v := range map[string]string{"search": d.Search, "dns1": d.DNS1, "dns2": d.DNS2, "dns3": d.DNS3} {
		if v != "" {
			m[k] = v
		}
	}
	return m, nil
}

// putDNS rewrites the node's resolv.conf as pve-common src/PVE/INotify.pm
// update_etc_resolv_conf does: "search" when given, then one nameserver
// line per dns1..dns3 in that order, skipping empty ones, 0.0.0.0 and
// repeats; read_etc_resolv_conf numbers them again from dns1. A server
// the call leaves out is gone, and a lone dns2 reads back as dns1.
func (s *Server) putDNS(q *request) (any, error) {
	if q.get("search") == "" {
		return nil, paramErr1("search", "property is missing and it is not optional")
	}
	var servers []string
	for _, k := range []string{"dns1", "dns2", "dns3"} {
		if ns := q.get(k); ns != "" && ns != "0.0.0.0" && !slices.Contains(servers, ns) {
			servers = append(servers, ns)
		}
	}
	servers = append(servers, "", "", "")
	s.st.DNS[q.vars["node"]] = &dnsConf{Search: q.get("search"), DNS1: servers[0], DNS2: servers[1], DNS3: servers[2]}
	return nil, nil
}
