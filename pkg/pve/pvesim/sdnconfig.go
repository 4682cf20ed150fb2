package pvesim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// sdnClass is one SDN section-config file and its plugins: the id's
// parameter name, the update method (whose schema types the values) and
// each type's options (true: required), as the plugins' options() list
// them. Only options are written: anything else a hook adds (a simple
// zone's vnet `mac`) is not kept (SectionConfig write_config).
type sdnClass struct {
	name   string // file: "zones"
	idKey  string // "zone"
	update string // apidoc key of the update method
	types  map[string]map[string]bool
}

// sdnClasses are the four files' plugins (pve-network
// src/PVE/Network/SDN/Zones/*Plugin.pm, VnetPlugin.pm, SubnetPlugin.pm,
// Controllers/*Plugin.pm options()).
func sdnClasses() map[string]*sdnClass {
	opts := func(required []string, optional ...string) map[string]bool {
		m := map[string]bool{}
		for _, k := range required {
			m[k] = true
		}
		for _, k := range optional {
			m[k] = false
		}
		return m
	}
	dns := []string{"nodes", "mtu", "dns", "reversedns", "dnszone", "ipam"}
	return map[string]*sdnClass{
		"zones": {name: "zones", idKey: "zone", update: "PUT /cluster/sdn/zones/{zone}", types: map[string]map[string]bool{
			"simple": opts(nil, append(dns, "dhcp")...),
			"vlan":   opts([]string{"bridge"}, append(dns, "bridge-disable-mac-learning")...),
			"qinq":   opts([]string{"tag", "bridge"}, append(dns, "bridge-disable-mac-learning", "vlan-protocol")...),
			"vxlan":  opts(nil, append(dns, "peers", "vxlan-port", "fabric")...),
			"evpn": opts([]string{"vrf-vxlan", "controller"}, append(dns, "exitnodes", "exitnodes-local-routing",
				"exitnodes-primary", "advertise-subnets", "disable-arp-nd-suppression", "bridge-disable-mac-learning",
				"rt-import", "vxlan-port", "mac")...),
			"faucet": opts([]string{"dp-id", "controller"}, "nodes", "dns", "reversedns", "dnszone", "ipam"),
		}},
		"vnets": {name: "vnets", idKey: "vnet", update: "PUT /cluster/sdn/vnets/{vnet}", types: map[string]map[string]bool{
			"vnet": opts([]string{"zone"}, "tag", "alias", "vlanaware", "isolate-ports"),
		}},
		"subnets": {name: "subnets", idKey: "subnet", update: "PUT /cluster/sdn/vnets/{vnet}/subnets/{subnet}", types: map[string]map[string]bool{
			"subnet": opts([]string{"vnet"}, "gateway", "snat", "dnszoneprefix", "dhcp-range", "dhcp-dns-server"),
		}},
		"controllers": {name: "controllers", idKey: "controller", update: "PUT /cluster/sdn/controllers/{controller}", types: map[string]map[string]bool{
			"evpn":   opts([]string{"asn"}, "peers", "fabric"),
			"bgp":    opts([]string{"node", "asn", "peers"}, "bgp-multipath-as-path-relax", "ebgp", "ebgp-multihop", "loopback"),
			"isis":   opts([]string{"isis-domain", "isis-net", "isis-ifaces", "node"}, "loopback"),
			"faucet": opts(nil),
		}},
	}
}

// sdnParams are the request's option values: all parameters but the
// ones the handler extracts first (extract_param).
func sdnParams(q *request, extracted ...string) map[string][]string {
	out := map[string][]string{}
	for k, v := range q.params {
		if !slices.Contains(extracted, k) {
			out[k] = v
		}
	}
	return out
}

// check is SectionConfig check_config for a section of type typ: every
// given key must be an option of the type (fixed ones none here) with
// no line break in its value (check_value), on
// create every required option given; values as check_value returns
// them (booleans and integers as numbers, node lists decoded).
func (c *sdnClass) check(typ string, params map[string][]string, create bool) (*sdnSection, error) {
	opts, ok := c.types[typ]
	if !ok {
		return nil, fmt.Errorf("unknown section type '%s'", typ)
	}
	out := &sdnSection{Type: typ, Opts: map[string]string{}}
	m, _ := schema.Default().Lookup(strings.Fields(c.update)[0], strings.Fields(c.update)[1])
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if _, ok := opts[k]; !ok {
			return nil, fmt.Errorf("unexpected property '%s'", k)
		}
		// check_value refuses a CR or LF even with skipSchemaCheck (the
		// handlers pass it): a scalar's, not an array's (dhcp-range is
		// a reference there, stringified "ARRAY(0x…)").
		if k != "dhcp-range" {
			if err := checkNoLineFeed(params[k][0]); err != nil {
				return nil, err
			}
		}
		if k == "dhcp-range" {
			out.Ranges = params[k]
			continue
		}
		out.Opts[k] = sdnDecode(m, k, params[k][0])
	}
	if create {
		for _, k := range slices.Sorted(maps.Keys(opts)) {
			if _, set := params[k]; opts[k] && !set {
				return nil, fmt.Errorf("missing value for required option '%s'", k)
			}
		}
	}
	return out, nil
}

// sdnDecode is check_value's number conversion and the plugins'
// decode_value of node lists (valid names, each once).
func sdnDecode(m *schema.Method, key, v string) string {
	if key == "nodes" || key == "exitnodes" {
		var nodes []string
		for _, n := range schema.SplitList(v) {
			if !slices.Contains(nodes, n) {
				nodes = append(nodes, n)
			}
		}
		slices.Sort(nodes)
		return strings.Join(nodes, ",")
	}
	if m == nil {
		return v
	}
	p, ok := m.Param(key)
	switch {
	case !ok:
	case p.Type == "boolean":
		if parseBoolean(v) {
			return "1"
		}
		return "0"
	case p.Type == "integer":
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return strconv.FormatInt(n, 10)
		}
	}
	return v
}

func parseBoolean(v string) bool {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// apply sets the checked options on an existing section after deleting
// the listed ones (SectionConfig delete_from_config: a required option
// cannot go, nor one set in the same call — `defined($new_options->{$k})`,
// so an option given as "" counts as set).
func (c *sdnClass) apply(sec, opts *sdnSection, del []string) error {
	typeOpts := c.types[sec.Type]
	for _, k := range del {
		required, ok := typeOpts[k]
		_, set := opts.Opts[k]
		switch {
		case !ok:
			return fmt.Errorf("no such option '%s'", k)
		case required:
			return fmt.Errorf("unable to delete required option '%s'", k)
		case k == "dhcp-range" && len(opts.Ranges) > 0, k != "dhcp-range" && set:
			return fmt.Errorf("cannot set and delete property '%s' at the same time!", k)
		}
		if k == "dhcp-range" {
			sec.Ranges = nil
		}
		delete(sec.Opts, k)
	}
	ensureMap(&sec.Opts)
	maps.Copy(sec.Opts, opts.Opts)
	if len(opts.Ranges) > 0 {
		sec.Ranges = opts.Ranges
	}
	return nil
}

// add puts a new section at the end of its file (write_config gives a
// section without an order the next one).
func (d *sdnState) add(name, id string, sec *sdnSection) {
	d.Seq++
	sec.Order = d.Seq
	d.Files[name][id] = sec
}

// object is the API's answer for one section of a view: the id under
// its key, the file's digest, values typed (in `pending` too).
func (c *sdnClass) object(id string, o map[string]any, digest string) map[string]any {
	m, _ := schema.Default().Lookup(strings.Fields(c.update)[0], strings.Fields(c.update)[1])
	out := map[string]any{}
	for k, v := range o {
		switch v := v.(type) {
		case string:
			out[k] = sdnTyped(m, k, v)
		case map[string]any:
			p := map[string]any{}
			for pk, pv := range v {
				if s, ok := pv.(string); ok && pk != "state" {
					p[pk] = sdnTyped(m, pk, s)
				} else {
					p[pk] = pv
				}
			}
			out[k] = p
		default:
			out[k] = v
		}
	}
	out[c.idKey] = id
	// The pending and running views have no digest: PVE sends undef,
	// a JSON null.
	out["digest"] = nil
	if digest != "" {
		out["digest"] = digest
	}
	return out
}

// sdnMissing is the "does not exist" die of a file's *_config helper.
func sdnMissing(name, id string) error {
	switch name {
	case "vnets":
		return fmt.Errorf("sdn vnet '%s' does not exist", id)
	case "subnets":
		return fmt.Errorf("sdn subnet '%s' does not exist", id)
	}
	return fmt.Errorf("sdn '%s' does not exist", id)
}

// die500 is a plain die answered by pve-http-server: a 500.
func die500(err error) error {
	if ae, ok := err.(*apiError); ok {
		return ae
	}
	return fail(http.StatusInternalServerError, "%s", err.Error())
}

// sdnGet reads one section of a view, or fails as the *_config helper.
func (s *Server) sdnGet(q *request, c *sdnClass, id string) (map[string]any, error) {
	v := s.sdnView(q, c.name)
	o, ok := v.objs[id]
	if !ok {
		return nil, die500(sdnMissing(c.name, id))
	}
	return c.object(id, o, v.digest), nil
}

// The zones and the controllers are typed sections with the same index,
// create and update around their plugins' hooks (pve-network
// API2/Network/SDN/Zones.pm, Controllers.pm).

// sdnTypedList is index: the objects of c the caller may audit or
// allocate on /sdn/<file>/<id>, of one type if asked.
func (s *Server) sdnTypedList(q *request, c *sdnClass) []map[string]any {
	v := s.sdnView(q, c.name)
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(v.objs)) {
		if !s.canAny(q.user, "/sdn/"+c.name+"/"+id, "SDN.Audit", "SDN.Allocate") {
			continue
		}
		o := c.object(id, v.objs[id], v.digest)
		if t := q.get("type"); t != "" && o["type"] != t {
			continue
		}
		out = append(out, o)
	}
	return out
}

// sdnTypedCreate is create: the type's check_config before the lock (its
// dies unprefixed), then under it a new id and add, which adds the
// section sec as id.
func (s *Server) sdnTypedCreate(q *request, c *sdnClass, add func(d *sdnState, id string, sec *sdnSection) error) error {
	id := q.get(c.idKey)
	sec, err := c.check(q.get("type"), sdnParams(q, "type", c.idKey, "lock-token"), true)
	if err != nil {
		return die500(err)
	}
	return s.sdnLocked(q.get("lock-token"), "create sdn "+c.idKey+" object failed", func(d *sdnState) error {
		if d.Files[c.name][id] != nil {
			return fmt.Errorf("sdn %s object ID '%s' already defined", c.idKey, id)
		}
		return add(d, id, sec)
	})
}

// sdnTypedUpdateStart is how update begins under the lock: the digest,
// the section (old), and its type's check_config of the call's values.
func sdnTypedUpdateStart(d *sdnState, c *sdnClass, q *request, id string) (old, opts *sdnSection, err error) {
	if err := assertDigest(d.Files[c.name], c, q.get("digest")); err != nil {
		return nil, nil, err
	}
	old = d.Files[c.name][id]
	if old == nil {
		return nil, nil, sdnMissing(c.name, id)
	}
	opts, err = c.check(old.Type, sdnParams(q, c.idKey, "digest", "delete", "lock-token"), false)
	return old, opts, err
}
