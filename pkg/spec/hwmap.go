package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// HardwareMapping: a cluster-wide resource mapping (pve-manager
// PVE/API2/Cluster/Mapping/{PCI,USB,Dir}.pm; pve-guest-common
// src/PVE/Mapping/{PCI,USB,Dir}.pm). Its type picks the API
// (/cluster/mapping/<type>); map is PVE's list of per-node entries, each
// a property string of the type's map format (node=…,path=…,id=…),
// written as such or as a map. A guest's hostpciN: mapping=…, usbN:
// mapping=… and virtiofsN: dirid=… name a mapping of the specs: an
// implicit dependency, refused when the mapping has no entry for the
// guest's node (qemu-server fails the start: "PCI device mapping not
// found for …").

// Hardware mapping types, as the API paths name them.
const (
	MappingPCI = "pci"
	MappingUSB = "usb"
	MappingDir = "dir"
)

// HardwareMappingKeys are a HardwareMapping's own keys.
type HardwareMappingKeys struct {
	Type string `json:"type" doc:"The mapping's type: pci, usb or dir (PVE's /cluster/mapping/<type>). A new type names another mapping; the old one is left."`
	Map  []any  `json:"map,omitempty" doc:"The mapping's entries, one per node (a PCI mapping may list several devices of one node): each PVE's property string (node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454 for pci; node=pve,id=0781:5583[,path=1-2] for usb; node=pve,path=/srv/share for dir) or the same as a map ({node: pve, path: /srv/share}). A guest that names the mapping needs an entry for its node. Compared as a set."`

	// Entries is the checked, normalized map the planner sends (Check
	// sets it): each entry's keys in PVE's order.
	Entries []string `json:"entries,omitempty" internal:"true"`
}

// MappingKeys returns r's mapping keys (the zero value when unset).
func MappingKeys(r *Resource) *HardwareMappingKeys {
	if k, ok := r.Keys.(*HardwareMappingKeys); ok && k != nil {
		return k
	}
	return &HardwareMappingKeys{}
}

// mappingEntryParam is the schema of one map entry of a mapping type.
func mappingEntryParam(typ string) *schema.Param {
	m, ok := schema.Default().Lookup("POST", "/cluster/mapping/"+typ)
	if !ok {
		return nil
	}
	p, ok := m.Param("map")
	if !ok {
		return nil
	}
	return p.Items
}

// mappingKeyOrder is the order an entry's keys are written in: the node,
// then what identifies the device, then the rest by name.
var mappingKeyOrder = []string{"node", "path", "id", "iommugroup", "subsystem-id", "description"}

// NormalizeMappingEntry parses one map entry and writes it with its keys
// in one order, so that entries compare as text.
func NormalizeMappingEntry(entry string) (string, map[string]string, error) {
	items, err := schema.SplitPropertyString(entry)
	if err != nil {
		return "", nil, err
	}
	kv := map[string]string{}
	for _, it := range items {
		if it.Key == "" {
			return "", nil, fmt.Errorf("%q has a value without a key: write key=value items (node=…)", it.Value)
		}
		if _, dup := kv[it.Key]; dup {
			return "", nil, fmt.Errorf("%s is written twice", it.Key)
		}
		kv[it.Key] = it.Value
	}
	keys := slices.SortedFunc(maps.Keys(kv), func(a, b string) int {
		ia, ib := slices.Index(mappingKeyOrder, a), slices.Index(mappingKeyOrder, b)
		switch {
		case ia >= 0 && ib >= 0:
			return ia - ib
		case ia >= 0:
			return -1
		case ib >= 0:
			return 1
		}
		return strings.Compare(a, b)
	})
	out := make([]schema.KV, 0, len(keys))
	for _, k := range keys {
		out = append(out, schema.KV{Key: k, Value: kv[k]})
	}
	return schema.FormatPropertyString(out, nil), kv, nil
}

// mappingEntry is one written map entry as a property string.
func mappingEntry(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case map[string]any:
		var items []schema.KV
		for _, k := range slices.Sorted(maps.Keys(x)) {
			switch val := x[k].(type) {
			case nil:
				continue
			case map[string]any, []any:
				return "", fmt.Errorf("%s: a map entry's values are scalars", k)
			default:
				items = append(items, schema.KV{Key: k, Value: fmt.Sprint(val)})
			}
		}
		return schema.FormatPropertyString(items, nil), nil
	}
	return "", fmt.Errorf("an entry is a property string (node=…,path=…) or a map of its keys, got %T", v)
}

// checkHardwareMapping checks what PVE's create would refuse: the type,
// the options of PCI mappings only, every entry against the type's map
// format, a directory mapping's node listed twice (Mapping/Dir.pm
// assert_valid_map_list), a USB mapping's second entry for one node
// (QemuServer/USB.pm refuses to start with it); it sets Entries.
func checkHardwareMapping(r *Resource, report func(key, format string, args ...any)) {
	k := MappingKeys(r)
	typ := k.Type
	switch typ {
	case MappingPCI, MappingUSB, MappingDir:
	case "":
		report("type", "spec.type is required: pci, usb or dir (which of PVE's resource mappings this is)")
		return
	default:
		report("type", "spec.type %q: want pci, usb or dir%s", typ, didYouMean(typ, []string{MappingPCI, MappingUSB, MappingDir}))
		return
	}
	for _, opt := range []string{"mdev", "live-migration-capable"} {
		if _, set := r.Params.Lookup(opt); set && typ != MappingPCI {
			report(opt, "%s is an option of pci mappings only (PVE refuses it for a %s mapping: property is not defined in schema)", opt, typ)
		}
	}
	if r.State != Present {
		return
	}
	if len(k.Map) == 0 {
		report("type", "spec.map is required: the mapping's entry for each node (PVE refuses a mapping without: missing value for required option 'map')")
		return
	}
	item := mappingEntryParam(typ)
	perNode := map[string]int{}
	var entries []string
	for i, v := range k.Map {
		at := fmt.Sprintf("map[%d]", i)
		if !r.KeyPos.Has(at) {
			at = "map"
		}
		raw, err := mappingEntry(v)
		if err == nil && item != nil {
			err = item.Check(raw)
		}
		var norm string
		var kv map[string]string
		if err == nil {
			norm, kv, err = NormalizeMappingEntry(raw)
		}
		if err != nil {
			report(at, "map[%d]: %v (a %s mapping's entry takes %s)", i, err, typ, strings.Join(mappingSubKeys(item), ", "))
			continue
		}
		perNode[kv["node"]]++
		if perNode[kv["node"]] == 2 && typ != MappingPCI {
			report(at, "map[%d]: node %s has a second entry: a %s mapping has one per node (%s)", i, kv["node"], typ, mappingOneWhy[typ])
		}
		entries = append(entries, norm)
	}
	slices.Sort(entries)
	k.Entries = entries
}

// mappingOneWhy is PVE's refusal of a second entry for one node.
var mappingOneWhy = map[string]string{
	MappingDir: "PVE refuses it: \"Node '…' is specified 2 times.\"",
	MappingUSB: "PVE does not start a guest with it: \"More than one USB mapping per host not supported\"",
}

func mappingSubKeys(p *schema.Param) []string {
	if p == nil {
		return nil
	}
	return subKeyNames(p.SubKeys())
}

// MappingNodes are the nodes a mapping's entries name.
func MappingNodes(r *Resource) []string {
	var out []string
	for _, e := range MappingKeys(r).Entries {
		if _, kv, err := NormalizeMappingEntry(e); err == nil && !slices.Contains(out, kv["node"]) {
			out = append(out, kv["node"])
		}
	}
	return out
}

// mappingIdentities: a mapping id is unique per type.
func mappingIdentities(r *Resource) []identity {
	id := r.Params.Get("id")
	if id == "" {
		return nil
	}
	typ := MappingKeys(r).Type
	return []identity{{ns: r.Kind + "\x00" + typ, key: fmt.Sprintf("%s mapping %q", typ, id), what: "id"}}
}

// mappingRefValue is how guests name a mapping: <type>/<id>, as its ACL
// path /mapping/<type>/<id> does.
func mappingRefValue(r *Resource) string {
	if id := r.Params.Get("id"); id != "" && MappingKeys(r).Type != "" {
		return MappingKeys(r).Type + "/" + id
	}
	return ""
}

// guestMappingRefs are the mappings a guest's devices name: hostpciN
// and usbN by mapping=, virtiofsN by dirid (its first, unnamed value).
func guestMappingRefs(r *Resource) []refValue {
	var out []refValue
	var devices []string // the few device keys, not every key sorted per family
	for key := range r.Params.All() {
		if isFamilyKey(key, "hostpci") || isFamilyKey(key, "usb") || isFamilyKey(key, "virtiofs") {
			devices = append(devices, key)
		}
	}
	if len(devices) == 0 {
		return nil
	}
	slices.Sort(devices)
	for _, fam := range []struct{ family, typ, sub string }{{"hostpci", MappingPCI, "mapping"}, {"usb", MappingUSB, "mapping"}, {"virtiofs", MappingDir, "dirid"}} {
		for _, key := range devices {
			if !isFamilyKey(key, fam.family) {
				continue
			}
			items, err := schema.SplitPropertyString(r.Params.Get(key))
			if err != nil {
				continue
			}
			for i, it := range items {
				if it.Key == fam.sub || (i == 0 && it.Key == "" && fam.sub == "dirid") {
					out = append(out, refValue{key, fam.typ + "/" + it.Value})
				}
			}
		}
	}
	return out
}

// GuestMapping is a mapping a guest's device names: the spec key, the
// mapping's type and id.
type GuestMapping struct{ Key, Type, ID string }

// GuestMappings are the mappings r's devices name (hostpciN and usbN by
// mapping=, virtiofsN by its dir id).
func GuestMappings(r *Resource) []GuestMapping {
	var out []GuestMapping
	for _, v := range guestMappingRefs(r) {
		typ, id, _ := strings.Cut(v.Value, "/")
		out = append(out, GuestMapping{Key: v.Key, Type: typ, ID: id})
	}
	return out
}

// mappingWithoutNode refuses a guest's mapped device whose mapping has no
// entry for the guest's node; "" accepts it (an edge). A guest whose node
// is left to the connection is checked by the plan, once its node is
// known (pkg/planner hwmap_prereq.go).
func mappingWithoutNode(r, m *Resource, v refValue) string {
	node := r.Node()
	if node == "" || HasOutputRef(node) || slices.Contains(MappingNodes(m), node) {
		return ""
	}
	typ, id, _ := strings.Cut(v.Value, "/")
	return fmt.Sprintf("%s: %s names %s mapping %s (%s), which has no entry for node %s (its nodes: %s): PVE does not start the guest (%s); add an entry for %s to the mapping's map",
		r.Address(), v.Key, typ, id, m.Address(), node, strings.Join(MappingNodes(m), ", "), mappingStartRefusal(typ, id, node), node)
}

// mappingStartRefusal is qemu-server's refusal at start (QemuServer/PCI.pm,
// USB.pm, Mapping/Dir.pm find_on_current_node).
func mappingStartRefusal(typ, id, node string) string {
	switch typ {
	case MappingPCI:
		return "\"PCI device mapping not found for '" + id + "'\""
	case MappingUSB:
		return "\"USB device mapping not found for '" + id + "'\""
	}
	return "\"No directory mapping for node " + node + ".\""
}
