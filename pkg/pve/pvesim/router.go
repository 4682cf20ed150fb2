package pvesim

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// handler answers one request. It runs with s.mu held.
type handler func(q *request) (any, error)

// route binds a handler to its key in the official API schema,
// "METHOD /path/{var}" exactly as the apidoc spells it.
type route struct {
	key     string
	h       handler
	noFault bool // exempt from injected faults (task status/log polling)
}

func r(key string, h handler) route { return route{key: key, h: h} }

func (rt route) withNoFault() route { rt.noFault = true; return rt }

// crudRoutes are a collection's five routes: GET lists and POST creates at
// base; GET reads, PUT updates and DELETE removes one at base+item.
func crudRoutes(base, item string, list, create, get, update, del handler) []route {
	return []route{
		r("GET "+base, list),
		r("POST "+base, create),
		r("GET "+base+item, get),
		r("PUT "+base+item, update),
		r("DELETE "+base+item, del),
	}
}

// idRoutes are the crudRoutes of a collection whose create names the new
// item in its path: POST at base+item, not at base.
func idRoutes(base, item string, list, create, get, update, del handler) []route {
	rs := crudRoutes(base, item, list, create, get, update, del)
	rs[1].key = "POST " + base + item
	return rs
}

// surfaces collects every surface's routes; each surface file declares
// its own, so a new surface is a new file and one line here.
func (s *Server) surfaces() [][]route {
	return [][]route{
		s.clusterRoutes(),
		s.taskRoutes(),
		s.qemuRoutes(),
		s.lxcRoutes(),
		s.poolRoutes(),
		s.networkRoutes(),
		s.dnsRoutes(),
		s.accessRoutes(),
		s.storageRoutes(),
		s.contentRoutes(),
		s.mappingRoutes(),
		s.devMappingRoutes(),
		s.snapshotRoutes(),
		s.aplinfoRoutes(),
		s.unlinkRoutes(),
		s.domainRoutes(),
		s.firewallRoutes(),

		s.sdnRoutes(),

		s.dcOptionRoutes(),
		s.metricServerRoutes(),
		s.realmSyncRoutes(),

		s.haRoutes(),
		s.backupRoutes(),
		s.replicationRoutes(),
	}
}

// routeTable indexes routes by the schema method their key names, so a
// request is matched once, by the schema, and that match picks both the
// handler and the parameter facts. A key the schema does not have, or one
// registered twice, is an error: the simulator serves PVE's paths only.
func routeTable(tbl *schema.Table, sets ...[]route) (map[*schema.Method]*route, error) {
	out := map[*schema.Method]*route{}
	for _, set := range sets {
		for i := range set {
			rt := &set[i]
			m, ok := tbl.Methods[rt.key]
			if !ok {
				return nil, fmt.Errorf("pvesim: route %q is not in the PVE API schema", rt.key)
			}
			if _, dup := out[m]; dup {
				return nil, fmt.Errorf("pvesim: route %q registered twice", rt.key)
			}
			out[m] = rt
		}
	}
	return out, nil
}

// routePath is the path PVE finds a method for, escaped one component at
// a time for schema.Match. pve-http-server unescapes the whole path
// before it is split (AnyEvent.pm: uri_unescape), so an escaped "/" cuts
// a component in two as a raw one does; pve-common RESTHandler.pm
// find_handler skips empty components and map_path_to_methods takes one
// component per {var} — except below {storage}/content, which pve-storage
// registers with an empty fragmentDelimiter (API2/Storage/Status.pm), so
// the rest of the path, slashes and all, is the volume id.
func routePath(decoded string) string {
	var comps []string
	for _, c := range strings.Split(decoded, "/") {
		if c != "" {
			comps = append(comps, c)
		}
	}
	if len(comps) > 6 && comps[0] == "nodes" && comps[2] == "storage" && comps[4] == "content" {
		comps = append(comps[:5], strings.Join(comps[5:], "/"))
	}
	comps = joinIPSetEntry(comps)
	for i, c := range comps {
		comps[i] = url.PathEscape(c)
	}
	return "/" + strings.Join(comps, "/")
}

// joinIPSetEntry keeps the rest of a path below …/firewall/ipset/{name}
// one component, the entry's cidr with its slash: pve-firewall registers
// the {name} subclass with an empty fragmentDelimiter
// (src/PVE/API2/Firewall/IPSet.pm, ClusterIPSetList, VMIPSetList).
func joinIPSetEntry(comps []string) []string {
	for i := 0; i+3 < len(comps); i++ {
		if comps[i] == "firewall" && comps[i+1] == "ipset" && len(comps) > i+4 {
			return append(comps[:i+3], strings.Join(comps[i+3:], "/"))
		}
	}
	return comps
}
