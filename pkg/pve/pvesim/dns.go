package pvesim

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

func (s *Server) putDNS(q *request) (any, error) {
	if q.get("search") == "" {
		return nil, paramErr1("search", "property is missing and it is not optional")
	}
	s.st.DNS[q.vars["node"]] = &dnsConf{Search: q.get("search"), DNS1: q.get("dns1"), DNS2: q.get("dns2"), DNS3: q.get("dns3")}
	return nil, nil
}
