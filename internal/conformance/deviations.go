package conformance

import "strings"

// Deviation is a place where PVE's answer contradicts its own return
// schema. The checker accepts there what PVE really sends, and nothing
// more: an integer written as a JSON string of digits, (Integer) a
// JSON integer where the schema says string, or (Absent) a property the
// schema requires left out.
type Deviation struct {
	Method, Path string // apidoc key: "GET", "/nodes/{node}/network"
	// Where is the value below "data": "" for data itself, "[].mtu" for a
	// property of every item of an array.
	Where string
	// Absent: PVE leaves the property out when it has no value.
	Absent bool
	// Integer: a string the schema declares is a JSON integer when the
	// value is one.
	Integer bool
	// Deleted: any property of the object may be the string "deleted"
	// whatever its declared type (SDN's pending values).
	Deleted bool
	// Added: the property Where names is missing from a closed object
	// schema, yet PVE sends it, as a value of this JSON schema type.
	Added  string
	Source string // the PVE source that makes the answer what it is
}

// Deviations is the whole list; keep it short, and cite each entry.
var Deviations = []Deviation{
	{Method: "GET", Path: "/cluster/nextid", Where: "",
		Source: "pve-manager PVE/API2/Cluster.pm nextid: the id is used as a hash key before it is returned, so Perl's JSON writes it as a string (a requested vmid is returned as the string it came as)"},
	{Method: "GET", Path: "/nodes/{node}/network", Where: "[].mtu",
		Source: "pve-common src/PVE/Network/Interfaces.pm __read_etc_network_interfaces: mtu is kept as the text read from the interfaces file"},
	{Method: "GET", Path: "/nodes/{node}/network", Where: "[].netmask6",
		Source: "pve-common src/PVE/Network/Interfaces.pm __read_etc_network_interfaces: netmask6 is the prefix length split from the address text"},
	{Method: "GET", Path: "/nodes/{node}/network", Where: "[].vlan-id",
		Source: "pve-common src/PVE/Network/Interfaces.pm __read_etc_network_interfaces: vlan-id is text, from the file or from the interface name (eno1.10, vlan10)"},
	{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/pending", Where: "[].value", Integer: true, Source: pendingSource},
	{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/pending", Where: "[].pending", Integer: true, Source: pendingSource},
	{Method: "GET", Path: "/nodes/{node}/lxc/{vmid}/pending", Where: "[].value", Integer: true, Source: pendingSource},
	{Method: "GET", Path: "/nodes/{node}/lxc/{vmid}/pending", Where: "[].pending", Integer: true, Source: pendingSource},
	{Method: "GET", Path: "/cluster/mapping/pci", Where: "[].description", Absent: true,
		Source: "pve-manager PVE/API2/Cluster/Mapping/PCI.pm index: each row is the mapping's section of mapping/pci.cfg, which has no description unless one was set"},
	{Method: "GET", Path: "/cluster/mapping/usb", Where: "[].description", Absent: true,
		Source: "pve-manager PVE/API2/Cluster/Mapping/USB.pm index: each row is the mapping's section of mapping/usb.cfg, which has no description unless one was set"},
	{Method: "GET", Path: "/cluster/mapping/usb", Where: "[].error", Absent: true,
		Source: "pve-manager PVE/API2/Cluster/Mapping/USB.pm index: the diagnostics are set as errors, and only with check-node; no row has error"},
	{Method: "GET", Path: "/cluster/mapping/dir", Where: "[].description", Absent: true,
		Source: "pve-manager PVE/API2/Cluster/Mapping/Dir.pm index: each row is the mapping's section of mapping/directory.cfg, which has no description unless one was set"},
	{Method: "GET", Path: "/pools/{poolid}", Where: "poolid", Added: "string",
		Source: "pve-manager PVE/API2/Pool.pm read_pool: it answers index's row, which has poolid, against a return schema without it (RESTHandler.pm handle verifies returns only when asked, and HTTPServer.pm does not ask)"},
	{Method: "GET", Path: "/cluster/sdn/zones", Where: "[].pending", Deleted: true, Source: sdnPendingSource},
	{Method: "GET", Path: "/cluster/sdn/zones/{zone}", Where: "pending", Deleted: true, Source: sdnPendingSource},
	{Method: "GET", Path: "/cluster/sdn/vnets", Where: "[].pending", Deleted: true, Source: sdnPendingSource},
	{Method: "GET", Path: "/cluster/sdn/vnets/{vnet}", Where: "pending", Deleted: true, Source: sdnPendingSource},
	{Method: "GET", Path: "/cluster/sdn/controllers", Where: "[].pending", Deleted: true, Source: sdnPendingSource},
	{Method: "GET", Path: "/cluster/sdn/controllers/{controller}", Where: "pending", Deleted: true, Source: sdnPendingSource},
}

// sdnPendingSource is why SDN's `pending` objects break their schema.
const sdnPendingSource = "pve-network src/PVE/Network/SDN.pm pending_config: a key the config files dropped is pending as the string 'deleted', whatever its type"

const pendingSource = "pve-guest-common GuestHelpers.pm config_with_pending_array: values from qemu-server parse_vm_config / pve-container parse_pct_config, whose check_type makes integer and boolean options Perl numbers"

// applyDeviations marks the return schemas the list names. An entry that
// names nothing in the apidoc is reported: the list must not rot.
func applyDeviations(returns map[string]*Returns, devs []Deviation) []string {
	var stale []string
	for _, d := range devs {
		r := returns[d.Method+" "+d.Path]
		if d.Added != "" {
			if !addProperty(r, splitWhere(d.Where), d.Added) {
				stale = append(stale, d.Method+" "+d.Path+" "+d.Where)
			}
			continue
		}
		for _, step := range splitWhere(d.Where) {
			if r == nil {
				break
			}
			if step == "[]" {
				r = r.Items
			} else {
				r = r.Properties[step]
			}
		}
		switch {
		case r != nil && d.Deleted && r.Type == "object":
			r.DeletedValues = true
		case d.Deleted:
			stale = append(stale, d.Method+" "+d.Path+" "+d.Where)
		case r != nil && d.Absent:
			r.Optional = true
		case r != nil && d.Integer && r.Type == "string":
			r.StringAsInteger = true
		case d.Integer:
			stale = append(stale, d.Method+" "+d.Path+" "+d.Where)
		case r == nil || r.Type != "integer":
			stale = append(stale, d.Method+" "+d.Path+" "+d.Where)
		default:
			r.IntegerAsString = true
		}
	}
	return stale
}

// addProperty declares the last step of where, an optional property of
// type typ, in the object the steps before it lead to; false when there is
// no such object or it already has the property.
func addProperty(r *Returns, where []string, typ string) bool {
	if len(where) == 0 {
		return false
	}
	for _, step := range where[:len(where)-1] {
		if r == nil {
			return false
		}
		if step == "[]" {
			r = r.Items
		} else {
			r = r.Properties[step]
		}
	}
	name := where[len(where)-1]
	if r == nil || r.Type != "object" || r.Properties[name] != nil {
		return false
	}
	if r.Properties == nil {
		r.Properties = map[string]*Returns{}
	}
	r.Properties[name] = &Returns{Type: typ, Optional: true}
	return true
}

// splitWhere splits "[].mtu" into "[]", "mtu".
func splitWhere(w string) []string {
	var out []string
	for w != "" {
		if rest, ok := strings.CutPrefix(w, "[]"); ok {
			out = append(out, "[]")
			w = rest
			continue
		}
		w = strings.TrimPrefix(w, ".")
		name, rest, _ := strings.Cut(w, ".")
		if i := strings.Index(name, "[]"); i >= 0 {
			name, rest = name[:i], w[i:]
		}
		out = append(out, name)
		w = rest
	}
	return out
}
