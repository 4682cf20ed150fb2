package spec

import (
	"fmt"
	"strconv"
)

// identity is what a resource is found by in PVE. Two documents of one
// connection with the same identity would manage the same object and undo
// each other's changes on every apply, so Load refuses them.
type identity struct {
	key  string // the kind's identity, e.g. "vmid 150" or "name web"
	what string // the spec key it comes from, for positions
	// passive identities clash only with active ones: the name of a VM that
	// has a vmid is not how it is found, but a VM without vmid of the same
	// name would be found as that VM.
	passive bool
}

// checkIdentities reports every resource whose PVE identity another one of
// the same connection already has, at the second one, naming the first.
func (l *loader) checkIdentities(rs []*Resource) {
	type claim struct {
		r       *Resource
		pos     Pos
		passive bool
	}
	seen := map[string]claim{} // connection, kind and identity → first claim
	for _, r := range rs {
		for _, id := range identities(r) {
			k := r.Connection + "\x00" + r.Kind + "\x00" + id.key
			pos := r.Pos
			if p, ok := r.KeyPos[id.what]; ok && p.File != "" {
				pos = p
			}
			first, dup := seen[k]
			if !dup {
				seen[k] = claim{r, pos, id.passive}
				continue
			}
			if first.passive && id.passive {
				continue
			}
			l.errorf(pos, "%s has the same %s as %s (at %s): both would manage the same %s; %s",
				r.Address(), id.key, first.r.Address(), first.pos, describeObject(r.Kind), identityHint(r.Kind))
			break
		}
	}
}

// identities returns the keys a resource is known by in PVE. A QemuVM with
// a vmid is found by it, one without by its name; the name of a VM with a
// vmid is returned too, passive, because a VM without vmid of that name
// would be found as that VM. Two VMs with vmids may share a name: PVE
// allows it and each is found by its vmid.
func identities(r *Resource) []identity {
	switch r.Kind {
	case KindQemuVM:
		name := r.Params["name"]
		if name == "" {
			name = r.Name
		}
		byName := fmt.Sprintf("VM name %q", name)
		if v, ok := r.Params["vmid"]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil // reported by the schema check
			}
			return []identity{{fmt.Sprintf("vmid %d", n), "vmid", false}, {byName, "name", true}}
		}
		return []identity{{byName, "name", false}}
	case KindPool:
		if p := r.Params["poolid"]; p != "" {
			return []identity{{fmt.Sprintf("poolid %q", p), "poolid", false}}
		}
	case KindLinuxBridge:
		// An unset node is the connection's default node: equal to another
		// unset node, not comparable with a named one.
		if i := r.Params["iface"]; i != "" {
			node := "the default node"
			if n := r.Params["node"]; n != "" {
				node = "node " + strconv.Quote(n)
			}
			return []identity{{fmt.Sprintf("iface %q on %s", i, node), "iface", false}}
		}
	case KindNetworkApply:
		if n := r.Params["node"]; n != "" {
			return []identity{{fmt.Sprintf("node %q", n), "node", false}}
		}
	}
	return nil
}

func describeObject(kind string) string {
	switch kind {
	case KindQemuVM:
		return "VM"
	case KindPool:
		return "pool"
	case KindLinuxBridge:
		return "bridge"
	case KindNetworkApply:
		return "node's network commit"
	}
	return "object"
}

func identityHint(kind string) string {
	switch kind {
	case KindQemuVM:
		return "a VM without vmid is found by its name: give each a different vmid or name, or remove one"
	case KindNetworkApply:
		return "one NetworkApply per node is enough"
	}
	return "remove one of them"
}
