package spec

import (
	"fmt"
	"hash/maphash"
	"strconv"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// identity is what a resource is found by in PVE. Two documents of one
// connection with the same identity in one namespace would manage the
// same object and undo each other's changes on every apply, so Load
// refuses them.
type identity struct {
	// ns is the namespace the identity lives in: kinds that share one
	// (QEMU VMs and containers share vmids) clash across kinds.
	ns string
	// key is the identity as messages show it, e.g. "vmid 150".
	key string
	// what is the spec key it comes from, for positions.
	what string
	// passive identities clash only with active ones: the name of a VM that
	// has a vmid is not how it is found, but a VM without vmid of the same
	// name would be found as that VM.
	passive bool
	// noun names what two kinds sharing the namespace would both manage
	// ("" for kinds that have the namespace alone).
	noun string
	// clash, when set, is the whole explanation of a clash in place of
	// "both would manage the same …; hint" (for claims, not identities).
	clash string
}

// nsVMID is the cluster-wide vmid space of every guest kind.
const nsVMID = "vmid"

// checkIdentities reports every resource whose PVE identity another one of
// the same connection already has, at the second one, naming the first.
func (l *loader) checkIdentities(rs []*Resource) {
	seen := newClaims(rs)
	for i, r := range rs {
		k := kindOf(r.Kind)
		if k == nil || k.Identities == nil {
			continue
		}
		for j, id := range k.Identities(r) {
			key := claimKey{r.Connection, id.ns, id.key}
			ref, dup := seen.find(key)
			if !dup {
				seen.add(key, claimRef{int32(i), int32(j)})
				continue
			}
			first, fid := seen.identity(ref)
			if fid.passive && id.passive {
				continue
			}
			noun, hint := Noun(r.Kind), k.Hint
			if first.Kind != r.Kind && id.noun != "" {
				// Two kinds in one namespace: name what they share.
				noun = id.noun
			}
			if hint == "" {
				hint = "remove one of them"
			}
			why := fmt.Sprintf("both would manage the same %s; %s", noun, hint)
			if id.clash != "" {
				why = id.clash
			}
			l.errorf(identityPos(r, id.what), "%s has the same %s as %s (at %s): %s",
				r.Address(), id.key, first.Address(), identityPos(first, fid.what), why)
			break
		}
	}
}

// claimKey is an identity in its connection and namespace.
type claimKey struct{ conn, ns, key string }

// claimRef is the first claim of an identity: the index of the resource
// and of the identity among its kind's Identities.
type claimRef struct{ r, id int32 }

// claims are the identities claimed so far. Every resource is in it at
// once, so it keeps each key as its 64-bit hash (a map slot of 16 bytes
// rather than ~90, and no key string kept alive); a key whose hash an
// earlier different key has (a collision) is kept whole in exact.
type claims struct {
	rs     []*Resource
	hash   func(claimKey) uint64
	byHash map[uint64]claimRef
	exact  map[claimKey]claimRef
}

func newClaims(rs []*Resource) *claims {
	seed := maphash.MakeSeed()
	return &claims{rs: rs, hash: func(k claimKey) uint64 { return maphash.Comparable(seed, k) },
		byHash: make(map[uint64]claimRef, len(rs)), exact: map[claimKey]claimRef{}}
}

// identity is the resource and identity a claim stands for.
func (c *claims) identity(ref claimRef) (*Resource, identity) {
	r := c.rs[ref.r]
	return r, kindOf(r.Kind).Identities(r)[ref.id]
}

// find returns the first claim of key.
func (c *claims) find(key claimKey) (claimRef, bool) {
	ref, ok := c.byHash[c.hash(key)]
	if !ok {
		return claimRef{}, false
	}
	if r, id := c.identity(ref); (claimKey{r.Connection, id.ns, id.key}) == key {
		return ref, true
	}
	ref, ok = c.exact[key]
	return ref, ok
}

// add records the first claim of key (find returned false).
func (c *claims) add(key claimKey, ref claimRef) {
	h := c.hash(key)
	if _, taken := c.byHash[h]; taken {
		c.exact[key] = ref
		return
	}
	c.byHash[h] = ref
}

// identityPos is where r's identity from spec key what was written: the
// key, or the document.
func identityPos(r *Resource, what string) Pos {
	if p, ok := r.KeyPos.Get(what); ok && p.File != "" {
		return p
	}
	return r.Pos
}

// guestIdentities identifies a guest by vmid when it has one, else by its
// name parameter (a VM's name, a container's hostname) in the namespace
// nameLabel. The name of a guest with a vmid is returned too, passive,
// because a guest without vmid of that name would be found as that one.
// Two guests with vmids may share a name: PVE allows it and each is found
// by its vmid.
func guestIdentities(nameParam, nameLabel string) func(r *Resource) []identity {
	return func(r *Resource) []identity {
		name := r.Params.Get(nameParam)
		if name == "" {
			name = r.Name
		}
		byName := fmt.Sprintf("%s %q", nameLabel, name)
		if v, ok := r.Params.Lookup("vmid"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil // reported by the schema check
			}
			const shared = "guest (VMs and containers share vmids)"
			return []identity{{ns: nsVMID, key: fmt.Sprintf("vmid %d", n), what: "vmid", noun: shared},
				{ns: nameLabel, key: byName, what: nameParam, passive: true}}
		}
		return []identity{{ns: nameLabel, key: byName, what: nameParam}}
	}
}

// ifaceIdentities identifies a node's network interface by node and name,
// in one namespace for every interface kind (a bridge and a bond may not
// share a name). An unset node is the connection's default node: equal to
// another unset node, not comparable with a named one. A present
// interface also claims each port it lists at portKey (bridge_ports,
// slaves): PVE puts a port on one interface only.
func ifaceIdentities(portKey string) func(r *Resource) []identity {
	return func(r *Resource) []identity {
		i := r.Params.Get("iface")
		if i == "" {
			return nil
		}
		node := "the default node"
		if n := r.Params.Get("node"); n != "" {
			node = "node " + strconv.Quote(n)
		}
		out := []identity{{ns: "iface", key: fmt.Sprintf("iface %q on %s", i, node), what: "iface",
			noun: "network interface (bridges and bonds share the node's interface names)"}}
		if r.State != Present {
			return out
		}
		for _, p := range schema.SplitList(r.Params.Get(portKey)) {
			if p == "none" {
				continue
			}
			out = append(out, identity{ns: "port", key: fmt.Sprintf("port %q on %s", p, node), what: portKey,
				clash: "PVE puts a port on one interface only (pve-manager Network.pm check_duplicate_ports): remove it from one of them"})
		}
		return out
	}
}

// singleIdentity identifies a resource by one parameter, e.g. a pool by
// its poolid, in a namespace of its own kind.
func singleIdentity(param, label string) func(r *Resource) []identity {
	return func(r *Resource) []identity {
		if v := r.Params.Get(param); v != "" {
			return []identity{{ns: r.Kind + "\x00" + param, key: fmt.Sprintf("%s %q", label, v), what: param}}
		}
		return nil
	}
}
