package planner

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// ifaceKind is one kind of node network interface (a Linux bridge, a bond):
// identity node + iface, in one namespace for all of them. PVE stages its
// changes in /etc/network/interfaces.new until a NetworkApply commits them.
// What differs between the kinds is the type and the checks of the calls.
type ifaceKind struct {
	typ   string // PVE's interface type, sent with every create and update
	ports string // the parameter listing its ports (bridge_ports, slaves)
	// check finds, at plan time, what PVE would refuse or not keep in the
	// call that creates or updates r with sent, beyond what every
	// interface shares (checkIfaceCall). It returns warnings for the plan.
	check func(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, sent map[string]string) ([]string, error)
}

const (
	networkCreatePath = "/nodes/{node}/network"
	networkUpdatePath = "/nodes/{node}/network/{iface}"
)

// ifaceSettings are the settings PUT /nodes/{node}/network/{iface} takes,
// for when the schema table lacks the method.
var ifaceSettings = []string{
	"address", "address6", "autostart", "bond-primary", "bond_mode", "bond_xmit_hash_policy",
	"bridge_ports", "bridge_vids", "bridge_vlan_aware", "cidr", "cidr6", "comments", "comments6",
	"gateway", "gateway6", "mtu", "netmask", "netmask6", "ovs_bonds", "ovs_bridge", "ovs_options",
	"ovs_ports", "ovs_tag", "slaves", "vlan-id", "vlan-raw-device",
}

// ifaceAddrKeys are the two spellings of one address family: PVE refuses a
// call carrying both cidr and address/netmask.
var ifaceAddrKeys = [][]string{{"cidr", "address", "netmask"}, {"cidr6", "address6", "netmask6"}}

// ifaceKeys lists the settings an interface call can carry: the PUT
// method's parameters, or ifaceSettings when the table lacks it.
func ifaceKeys(put *schema.Method) []string {
	if put != nil {
		return slices.Sorted(maps.Keys(put.Params))
	}
	return ifaceSettings
}

// carryLive adds to an interface update the live settings the spec does not
// manage. PVE's PUT keeps unnamed keys, but derives the method (static or
// manual) and address families from the call alone: an update that leaves
// out the address would stage the interface without its IP and gateway,
// and the commit would cut whatever ran over it (often the management
// network). Keys the spec removes stay out.
func carryLive(params map[string]string, live *pve.Config, remove []string, put *schema.Method) {
	skip := map[string]bool{"node": true, "iface": true, "type": true, "delete": true, "digest": true}
	for _, k := range remove {
		skip[k] = true
	}
	for _, family := range ifaceAddrKeys {
		managed := false
		for _, k := range family {
			_, set := params[k]
			managed = managed || set || skip[k]
		}
		cidr, addr, mask := family[0], family[1], family[2]
		switch {
		case managed:
			skip[cidr], skip[addr], skip[mask] = true, true, true
		case live.Get(cidr) != "":
			skip[addr], skip[mask] = true, true
		default:
			skip[cidr] = true
		}
	}
	for _, k := range ifaceKeys(put) {
		v, has := live.Lookup(k)
		if _, set := params[k]; set || !has || skip[k] {
			continue
		}
		if compare.CommentKeys[k] {
			v = strings.TrimRight(v, "\n")
		}
		params[k] = v
	}
}

var ifaceIdentity = map[string]bool{"node": true, "iface": true, "type": true}

// ifaceLive is what observe reads about an interface beside its config.
type ifaceLive struct {
	Staged bool // the node's network has uncommitted changes
	// Holders names, for gateway and gateway6, the node's other
	// interfaces that have it set (PVE allows one of each per node).
	Holders map[string][]string
	// Others are the node's other interfaces, by name (for the checks of
	// ports and slaves).
	Others map[string]*pve.Config
}

// Traits: an interface lives on its node, and PVE stages its changes in
// the node's interfaces.new until the node's NetworkApply commits them.
func (ifaceKind) Traits() engine.KindTraits {
	return engine.KindTraits{Scope: engine.ScopeNode, Stages: string(engine.ScopeNode), StagedWhat: "network",
		CommittedBy: spec.KindNetworkApply, StagedAlready: nodeStaged}
}

// nodeStaged says whether lo's node has uncommitted network changes.
func nodeStaged(lo *engine.LiveObj) bool {
	st, ok := lo.State.(*ifaceLive)
	return ok && st.Staged
}

func ifaceName(r *spec.Resource) string {
	if n := r.Params.Get("iface"); n != "" {
		return n
	}
	return r.Name
}

func (ifaceKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	node, err := lc.Node(r)
	if err != nil {
		return nil, err
	}
	ln, err := lc.Network(ctx, node)
	if err != nil {
		return nil, err
	}
	return ifaceObj(ln, node, ifaceName(r)), nil
}

func ifaceObj(ln *engine.LiveNetwork, node, iface string) *engine.LiveObj {
	others := map[string]*pve.Config{}
	for _, c := range ln.Ifaces {
		if c.Get("iface") != iface {
			others[c.Get("iface")] = c
		}
	}
	st := &ifaceLive{Staged: ln.Changes != "", Holders: gatewayHolders(ln.Ifaces, iface), Others: others}
	cfg := ln.Iface(iface)
	if cfg == nil {
		return &engine.LiveObj{Node: node, State: st}
	}
	return &engine.LiveObj{Exists: true, Node: node, Config: cfg, Digest: engine.FieldsDigest(cfg), State: st}
}

func (k ifaceKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	if typ := lo.Config.Get("type"); typ != k.typ {
		c.Diff = []engine.FieldDiff{{Path: "type", Before: typ, After: k.typ}}
		return b.Replace(r, c, fmt.Sprintf("%s is a %s, not a %s", ifaceName(r), typ, k.typ))
	}
	cmp := compare.Comparer{M: b.Method("POST", networkCreatePath)}
	c.Diff = cmp.DiffParams(r.Params.Map(), r.Remove, lo.Config, ifaceIdentity)
	if !engine.UpdateForDiff(c) {
		return nil
	}
	// PVE's PUT wants the type and the whole definition, not just the changes.
	c.Params = ifaceParams(r, k.typ)
	carryLive(c.Params, lo.Config, r.Remove, b.Method("PUT", networkUpdatePath))
	del := sendFlags(c.Params, lo.Config)
	for _, key := range r.Remove {
		if _, ok := lo.Config.Lookup(key); ok {
			del = append(del, key)
		}
	}
	if len(del) > 0 {
		c.Params["delete"] = strings.Join(compare.SortedUnique(del), ",")
	}
	return k.checkCall(b, r, lo, c, c.Params)
}

// CheckCreate finds what PVE would refuse in the create call.
func (k ifaceKind) CheckCreate(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	params := ifaceParams(r, k.typ)
	sendFlags(params, nil)
	return k.checkCall(b, r, lo, c, params)
}

// checkCall runs the shared and the kind's checks of a call; warnings
// become reasons of the change.
func (k ifaceKind) checkCall(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change, sent map[string]string) error {
	if err := checkIfaceCall(b, r, lo, sent); err != nil {
		return err
	}
	warns, err := k.checkPorts(b, r, lo)
	if err != nil {
		return err
	}
	c.Reasons = append(c.Reasons, warns...)
	if k.check == nil {
		return nil
	}
	warns, err = k.check(b, r, lo, sent)
	c.Reasons = append(c.Reasons, warns...)
	return err
}

// ifaceParams is the full desired definition of an interface.
func ifaceParams(r *spec.Resource, typ string) map[string]string {
	out := map[string]string{"type": typ}
	for k, v := range r.Params.All() {
		if k != "node" && k != "iface" {
			out[k] = v
		}
	}
	return out
}

func toValues(m map[string]string) url.Values {
	v := url.Values{}
	for k, x := range m {
		v.Set(k, x)
	}
	return v
}

func (k ifaceKind) Create(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	iface := ifaceName(c.Resource)
	p := ifaceParams(c.Resource, k.typ)
	sendFlags(p, nil) // a false flag of definedIsOn is left out: sent as 0 it would switch it on
	params := toValues(p)
	params.Set("iface", iface)
	if err := x.Client.CreateIface(ctx, c.Node, params); err != nil {
		return fmt.Errorf("create %s %s on node %s: %w", k.typ, iface, c.Node, err)
	}
	return nil
}

func (k ifaceKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	iface := ifaceName(c.Resource)
	// PVE keeps no digest for an interface and its PUT overwrites the
	// whole definition, carried-over live settings included (carryLive):
	// a hand edit made since the plan would be overwritten unseen, and a
	// NetworkApply would make that live. So read it again right before
	// the write, and refuse if it moved.
	if c.Digest != "" {
		now, err := k.Current(ctx, x.Client, c)
		if err != nil {
			return fmt.Errorf("re-read %s %s on node %s: %w", k.typ, iface, c.Node, err)
		}
		switch {
		case !now.Exists:
			return &engine.StaleError{Address: c.Address, Why: fmt.Sprintf("%s is gone from node %s", iface, c.Node)}
		case !sameIface(now, c.Digest):
			return &engine.StaleError{Address: c.Address, Why: fmt.Sprintf("%s on node %s was edited", iface, c.Node)}
		}
	}
	if err := x.Client.UpdateIface(ctx, c.Node, iface, toValues(c.Params)); err != nil {
		return fmt.Errorf("update %s %s on node %s: %w", k.typ, iface, c.Node, err)
	}
	return nil
}

func (ifaceKind) Remove(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	iface := ifaceName(c.Resource)
	if err := x.Client.DeleteIface(ctx, c.Node, iface); err != nil && !pve.IsNotFound(err) {
		return fmt.Errorf("delete interface %s on node %s: %w", iface, c.Node, err)
	}
	return nil
}

func (ifaceKind) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	ifaces, changes, err := cl.NetworkList(ctx, c.Node)
	if err != nil {
		return nil, err
	}
	return ifaceObj(&engine.LiveNetwork{Ifaces: ifaces, Changes: changes}, c.Node, ifaceName(c.Resource)), nil
}

// ReadCalls: GET /nodes/{node}/network is open to all but leaves out the
// bridges the caller may neither use nor audit (pve-manager
// API2/Network.pm index); other interfaces are listed to anyone.
func (k ifaceKind) ReadCalls(r *spec.Resource) []engine.APICall {
	c := engine.Call("GET", "/nodes/{node}/network", "to see the interface", "node", r.Params.Get("node"))
	if k.typ == "bridge" {
		c = c.With(engine.NeedAny("/sdn/zones/localnetwork/"+ifaceName(r),
			"to see the bridge (PVE lists only the bridges a token may use or audit)", "SDN.Audit", "SDN.Use"))
	}
	return []engine.APICall{c}
}

// ChangeCalls: POST /nodes/{node}/network, PUT and DELETE
// /nodes/{node}/network/{iface}.
func (ifaceKind) ChangeCalls(c *engine.Change, _ *engine.LiveObj) []engine.APICall {
	why, iface := "to "+c.Action.String()+" the interface", ifaceName(c.Resource)
	post := engine.Call("POST", "/nodes/{node}/network", why, "node", c.Node, "iface", iface)
	put := engine.Call("PUT", "/nodes/{node}/network/{iface}", why, "node", c.Node, "iface", iface)
	del := engine.Call("DELETE", "/nodes/{node}/network/{iface}", why, "node", c.Node, "iface", iface)
	switch c.Action {
	case engine.Create:
		return []engine.APICall{post}
	case engine.Update:
		return []engine.APICall{put}
	case engine.Delete:
		return []engine.APICall{del}
	case engine.Replace:
		return []engine.APICall{del, post}
	}
	return nil
}

// sameIface reports whether lo is the interface whose digest the plan
// took. A bond's slave may have gained autostart meanwhile without an
// edit: PVE's writer brings every bond slave up at boot (pve-common
// Network/Interfaces.pm, the bond check), so a bond this run wrote may
// have changed its slave, itself an interface of the run (a bond of
// bonds).
func sameIface(lo *engine.LiveObj, digest string) bool {
	if lo.Digest == digest {
		return true
	}
	st, _ := lo.State.(*ifaceLive)
	if st == nil || lo.Config.Get("autostart") != "1" || !isSlave(st.Others, lo.Config.Get("iface")) {
		return false
	}
	for _, before := range []string{"", "0"} {
		cfg := lo.Config.Clone()
		if before == "" {
			cfg.Delete("autostart")
		} else {
			cfg.Set("autostart", before)
		}
		if engine.FieldsDigest(cfg) == digest {
			return true
		}
	}
	return false
}

// isSlave reports whether a bond among ifaces has name as a slave.
func isSlave(ifaces map[string]*pve.Config, name string) bool {
	for _, c := range ifaces {
		if c.Get("type") == "bond" && slices.Contains(schema.SplitList(c.Get("slaves")), name) {
			return true
		}
	}
	return false
}
