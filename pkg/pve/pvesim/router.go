package pvesim

import (
	"net/url"
	"strings"
)

// route maps one "METHOD /path/{var}" to its handler. Handlers run with s.mu held.
type route struct {
	method  string
	segs    []string
	h       func(q *request) (any, error)
	task    bool // starts a task: subject to injected lock contention
	noFault bool // exempt from injected faults (task status/log polling)
}

func r(method, pattern string, h func(q *request) (any, error)) route {
	return route{method: method, segs: strings.Split(strings.Trim(pattern, "/"), "/"), h: h}
}

func (rt route) withTask() route    { rt.task = true; return rt }
func (rt route) withNoFault() route { rt.noFault = true; return rt }

func (s *Server) routeTable() []route {
	return []route{
		r("GET", "/version", s.getVersion),
		r("GET", "/nodes", s.listNodes),
		r("GET", "/nodes/{node}/status", s.nodeStatus),
		r("GET", "/cluster/resources", s.clusterResources),
		r("GET", "/cluster/nextid", s.nextID),

		r("GET", "/nodes/{node}/tasks", s.listTasks),
		r("GET", "/nodes/{node}/tasks/{upid}/status", s.taskStatus).withNoFault(),
		r("GET", "/nodes/{node}/tasks/{upid}/log", s.taskLog).withNoFault(),

		r("GET", "/nodes/{node}/qemu", s.listVMs),
		r("POST", "/nodes/{node}/qemu", s.createVM).withTask(),
		r("GET", "/nodes/{node}/qemu/{vmid}", s.vmIndex),
		r("DELETE", "/nodes/{node}/qemu/{vmid}", s.destroyVM).withTask(),
		r("GET", "/nodes/{node}/qemu/{vmid}/config", s.getVMConfig),
		r("POST", "/nodes/{node}/qemu/{vmid}/config", s.postVMConfig).withTask(),
		r("PUT", "/nodes/{node}/qemu/{vmid}/config", s.putVMConfig),
		r("GET", "/nodes/{node}/qemu/{vmid}/pending", s.getVMPending),
		r("GET", "/nodes/{node}/qemu/{vmid}/status/current", s.vmStatus),
		r("POST", "/nodes/{node}/qemu/{vmid}/status/start", s.vmPower("start")).withTask(),
		r("POST", "/nodes/{node}/qemu/{vmid}/status/stop", s.vmPower("stop")).withTask(),
		r("POST", "/nodes/{node}/qemu/{vmid}/status/shutdown", s.vmPower("shutdown")).withTask(),
		r("POST", "/nodes/{node}/qemu/{vmid}/status/reboot", s.vmPower("reboot")).withTask(),
		r("POST", "/nodes/{node}/qemu/{vmid}/clone", s.cloneVM).withTask(),
		r("POST", "/nodes/{node}/qemu/{vmid}/template", s.templateVM).withTask(),
		r("PUT", "/nodes/{node}/qemu/{vmid}/resize", s.resizeVM).withTask(),
		r("GET", "/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces", s.agentIfaces),

		r("GET", "/nodes/{node}/lxc", s.listCTs),
		r("POST", "/nodes/{node}/lxc", s.createCT).withTask(),
		r("GET", "/nodes/{node}/lxc/{vmid}", s.ctIndex),
		r("DELETE", "/nodes/{node}/lxc/{vmid}", s.destroyVM).withTask(),
		r("GET", "/nodes/{node}/lxc/{vmid}/config", s.getVMConfig),
		r("PUT", "/nodes/{node}/lxc/{vmid}/config", s.putVMConfig),
		r("GET", "/nodes/{node}/lxc/{vmid}/pending", s.getVMPending),
		r("GET", "/nodes/{node}/lxc/{vmid}/status/current", s.ctStatus),
		r("POST", "/nodes/{node}/lxc/{vmid}/status/start", s.vmPower("start")).withTask(),
		r("POST", "/nodes/{node}/lxc/{vmid}/status/stop", s.vmPower("stop")).withTask(),
		r("POST", "/nodes/{node}/lxc/{vmid}/status/shutdown", s.vmPower("shutdown")).withTask(),
		r("POST", "/nodes/{node}/lxc/{vmid}/status/reboot", s.vmPower("reboot")).withTask(),
		r("POST", "/nodes/{node}/lxc/{vmid}/clone", s.cloneVM).withTask(),
		r("POST", "/nodes/{node}/lxc/{vmid}/template", s.templateVM),
		r("PUT", "/nodes/{node}/lxc/{vmid}/resize", s.resizeVM).withTask(),
		r("GET", "/nodes/{node}/lxc/{vmid}/interfaces", s.ctInterfaces),

		r("GET", "/pools", s.listPools),
		r("POST", "/pools", s.createPool),
		r("PUT", "/pools", s.updatePool),
		r("DELETE", "/pools", s.deletePool),
		r("GET", "/pools/{poolid}", s.getPool),
		r("PUT", "/pools/{poolid}", s.updatePool),
		r("DELETE", "/pools/{poolid}", s.deletePool),

		r("GET", "/nodes/{node}/network", s.listNetwork),
		r("POST", "/nodes/{node}/network", s.createIface),
		r("PUT", "/nodes/{node}/network", s.applyNetwork).withTask(),
		r("DELETE", "/nodes/{node}/network", s.revertNetwork),
		r("GET", "/nodes/{node}/network/{iface}", s.getIface),
		r("PUT", "/nodes/{node}/network/{iface}", s.updateIface),
		r("DELETE", "/nodes/{node}/network/{iface}", s.deleteIface),

		r("GET", "/nodes/{node}/dns", s.getDNS),
		r("PUT", "/nodes/{node}/dns", s.putDNS),

		r("GET", "/access/users", s.listUsers),
		r("POST", "/access/users", s.createUser),
		r("GET", "/access/users/{userid}", s.getUser),
		r("PUT", "/access/users/{userid}", s.updateUser),
		r("DELETE", "/access/users/{userid}", s.deleteUser),
		r("GET", "/access/users/{userid}/token", s.listTokens),
		r("GET", "/access/users/{userid}/token/{tokenid}", s.getToken),
		r("POST", "/access/users/{userid}/token/{tokenid}", s.createToken),
		r("PUT", "/access/users/{userid}/token/{tokenid}", s.updateToken),
		r("DELETE", "/access/users/{userid}/token/{tokenid}", s.deleteToken),
		r("GET", "/access/groups", s.listGroups),
		r("POST", "/access/groups", s.createGroup),
		r("GET", "/access/groups/{groupid}", s.getGroup),
		r("PUT", "/access/groups/{groupid}", s.updateGroup),
		r("DELETE", "/access/groups/{groupid}", s.deleteGroup),
		r("GET", "/access/roles", s.listRoles),
		r("POST", "/access/roles", s.createRole),
		r("GET", "/access/acl", s.listACL),
		r("PUT", "/access/acl", s.updateACL),

		r("GET", "/storage", s.listStorage),
		r("GET", "/storage/{storage}", s.getStorage),
		r("GET", "/nodes/{node}/storage", s.nodeStorage),
		r("GET", "/nodes/{node}/storage/{storage}/status", s.nodeStorageStatus),
		r("GET", "/nodes/{node}/storage/{storage}/content", s.storageContent),
		r("POST", "/storage", s.createStorage),
		r("PUT", "/storage/{storage}", s.updateStorage),
		r("DELETE", "/storage/{storage}", s.deleteStorage),
		r("POST", "/nodes/{node}/storage/{storage}/download-url", s.downloadURL),
		r("POST", "/nodes/{node}/storage/{storage}/upload", s.uploadFile),
		r("GET", "/nodes/{node}/storage/{storage}/content/{volume}", s.getVolume),
		r("PUT", "/nodes/{node}/storage/{storage}/content/{volume}", s.putVolume),
		r("DELETE", "/nodes/{node}/storage/{storage}/content/{volume}", s.deleteVolume),
	}
}

// match finds the route for a concrete path. Literal segments win over
// variables so that /nodes/{node}/qemu/{vmid} never shadows a fixed child.
func (s *Server) match(method, path string) (*route, map[string]string) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, seg := range segs {
		// Volume ids arrive escaped ("local%3Aiso%2Fx.iso"): decode per segment.
		if u, err := url.PathUnescape(seg); err == nil {
			segs[i] = u
		}
	}
	var best *route
	var bestVars map[string]string
	bestLit := -1
	for i := range s.routes {
		rt := &s.routes[i]
		if rt.method != method || len(rt.segs) != len(segs) {
			continue
		}
		vars := map[string]string{}
		lit := 0
		ok := true
		for j, p := range rt.segs {
			if strings.HasPrefix(p, "{") {
				if segs[j] == "" {
					ok = false
					break
				}
				vars[p[1:len(p)-1]] = segs[j]
				continue
			}
			if p != segs[j] {
				ok = false
				break
			}
			lit++
		}
		if ok && lit > bestLit {
			best, bestVars, bestLit = rt, vars, lit
		}
	}
	return best, bestVars
}
