package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/spec"
)

// SDN zones, vnets, subnets and controllers (issue 20): entries of
// pve-network's section-config files (src/PVE/API2/Network/SDN/Zones.pm,
// Vnets.pm, Subnets.pm, Controllers.pm). Every write lands in the files
// only — pending — until the cluster's SdnApply commits them
// (sdnapply.go), so the kinds stage into the scope "cluster/sdn". The
// lists answer the files by default, which is what pvectl compares; the
// `pending=1` view says whether an object waits for a commit. Every write
// carries the token of SDN's lock, taken by the apply's first SDN write
// (sdnlock.go).
type sdnObjKind struct {
	kind string
	file string // the config file: "zones", "vnets", "subnets", "controllers"
	// idKey is the entry's id in a list row and the create parameter
	// naming it ("zone"); subnets are found by their CIDR instead.
	idKey string
	// createPath is the POST that creates, as the schema names it.
	createPath string
	// fixed are keys PVE's update does not take: a change replaces.
	fixed []string
	// dropped are members of a row that are not settings.
	dropped []string
	// acl is the ACL path of an object (its zone for a vnet or subnet,
	// from the live vnet when the spec does not say it).
	acl func(p map[string]string, zone string) string
	// createACL is the path the create checks.
	createACL func(p map[string]string) string
}

var (
	sdnZoneKind = &sdnObjKind{kind: spec.KindSdnZone, file: "zones", idKey: "zone", createPath: "/cluster/sdn/zones",
		fixed: []string{"type"}, dropped: []string{"state", "pending", "mac", "ipam"},
		acl:       func(p map[string]string, _ string) string { return "/sdn/zones/" + p["zone"] },
		createACL: func(map[string]string) string { return "/sdn/zones" }}
	sdnVnetKind = &sdnObjKind{kind: spec.KindSdnVnet, file: "vnets", idKey: "vnet", createPath: "/cluster/sdn/vnets",
		fixed: []string{"type"}, dropped: []string{"state", "pending"},
		acl:       func(p map[string]string, _ string) string { return "/sdn/zones/" + p["zone"] + "/" + p["vnet"] },
		createACL: func(p map[string]string) string { return "/sdn/zones/" + p["zone"] }}
	sdnSubnetKind = &sdnObjKind{kind: spec.KindSdnSubnet, file: "subnets", idKey: "subnet", createPath: "/cluster/sdn/vnets/{vnet}/subnets",
		fixed:   []string{"type", "vnet"},
		dropped: []string{"state", "pending", "id", "zone", "network", "mask", "cidr", "subnet"},
		acl: func(p map[string]string, zone string) string {
			if zone == "" {
				return "/sdn/zones" // its vnet is not made yet
			}
			return "/sdn/zones/" + zone + "/" + p["vnet"]
		}}
	sdnControllerKind = &sdnObjKind{kind: spec.KindSdnController, file: "controllers", idKey: "controller", createPath: "/cluster/sdn/controllers",
		fixed: []string{"type"}, dropped: []string{"state", "pending"},
		acl:       func(map[string]string, string) string { return "/sdn/controllers" },
		createACL: func(map[string]string) string { return "/sdn/controllers" }}
)

// sdnObjLive is what observe read beside the settings: PVE's id of the
// entry (a subnet's <zone>-<network>-<mask>), the vnet's zone (a
// subnet's ACL path), and the entry's pending state (new, changed,
// deleted; "" when committed).
type sdnObjLive struct {
	ID      string
	Zone    string
	Pending string
}

func sdnLive(lo *engine.LiveObj) *sdnObjLive {
	if lo != nil {
		if sl, ok := lo.State.(*sdnObjLive); ok {
			return sl
		}
	}
	return &sdnObjLive{}
}

// listPath is the GET listing r's entries (a subnet: its vnet's).
func (k *sdnObjKind) listPath(p map[string]string) string {
	if k.file == "subnets" {
		return "/cluster/sdn/vnets/" + url.PathEscape(p["vnet"]) + "/subnets"
	}
	return "/cluster/sdn/" + k.file
}

func (k *sdnObjKind) itemPath(p map[string]string, id string) string {
	return k.listPath(p) + "/" + url.PathEscape(id)
}

// matches says whether row is r's entry.
func (k *sdnObjKind) matches(row *pve.Config, p map[string]string) bool {
	if k.file == "subnets" {
		return row.Get("cidr") == p["subnet"] && p["subnet"] != ""
	}
	return row.Get(k.idKey) == p[k.idKey] && p[k.idKey] != ""
}

// settings are a row's settings as the spec writes them: a subnet's
// DHCP ranges (objects in PVE's answer) as one property string a line.
func (k *sdnObjKind) settings(row *pve.Config) *pve.Config {
	cfg := pve.NewConfig(0)
	for key, v := range row.All() {
		if key == k.idKey || key == "digest" || slices.Contains(k.dropped, key) {
			continue
		}
		if key == "dhcp-range" {
			v = dhcpRangeLines(v)
			if v == "" {
				continue
			}
		}
		cfg.Set(key, v)
	}
	if k.file == "subnets" {
		cfg.Set("vnet", row.Get("vnet"))
	}
	return cfg
}

// dhcpRangeLines turns Subnets.pm's list of {start-address,end-address}
// into "start-address=A,end-address=B" lines.
func dhcpRangeLines(raw string) string {
	var ranges []map[string]string
	if err := json.Unmarshal([]byte(raw), &ranges); err != nil {
		return raw
	}
	var lines []string
	for _, r := range ranges {
		lines = append(lines, "start-address="+r["start-address"]+",end-address="+r["end-address"])
	}
	return strings.Join(lines, "\n")
}

// find reads r's entry from the lists (files and pending views).
func (k *sdnObjKind) find(read func(path string) ([]*pve.Config, error), p map[string]string) (*engine.LiveObj, error) {
	live := &sdnObjLive{}
	if k.file == "subnets" {
		vnets, err := read("/cluster/sdn/vnets")
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(vnets, func(row *pve.Config) bool { return row.Get("vnet") == p["vnet"] && row.Get("state") != "deleted" })
		if i < 0 {
			return &engine.LiveObj{State: live}, nil // no vnet, no subnet on it
		}
		live.Zone = vnets[i].Get("zone")
	}
	rows, err := read(k.listPath(p))
	if err != nil {
		return nil, err
	}
	lo := &engine.LiveObj{State: live}
	for _, row := range rows {
		if !k.matches(row, p) {
			continue
		}
		live.Pending = row.Get("state")
		if row.Get("state") == "deleted" {
			break // only in the running config: gone from the files
		}
		cfg := k.settings(row)
		live.ID = row.Get(k.idKey)
		*lo = engine.LiveObj{Exists: true, Config: cfg, Digest: engine.FieldsDigest(cfg), State: live}
		break
	}
	return lo, nil
}

func (k *sdnObjKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	if k.file != "subnets" {
		return k.find(func(path string) ([]*pve.Config, error) { return lc.SDNRows(ctx, path) }, r.Params.Map())
	}
	// Each vnet's subnets are a list of their own: read as a deferred
	// load, several vnets at once (loadAll), each list once.
	lo, p := &engine.LiveObj{}, r.Params
	lo.Load = func(ctx context.Context) error {
		got, err := k.find(func(path string) ([]*pve.Config, error) { return lc.SDNRows(ctx, path) }, p.Map())
		if err == nil {
			*lo = *got
		}
		return err
	}
	return lo, nil
}

func (k *sdnObjKind) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	return k.find(func(path string) ([]*pve.Config, error) { return engine.ReadSDN(ctx, cl, path) }, c.Resource.Params.Map())
}

func (k *sdnObjKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	cmp := compare.Comparer{M: b.Method("POST", k.createPath)}
	skip := map[string]bool{k.idKey: true, "digest": true, "lock-token": true}
	if k.file == "subnets" {
		skip["subnet"] = true
	}
	c.Diff = cmp.DiffParams(r.Params.Map(), r.Remove, lo.Config, skip)
	if len(c.Diff) == 0 {
		c.Action = engine.NoOp
		return nil
	}
	c.Reasons = compare.Reasons(c.Diff)
	if changed := fixedChanged(c.Diff, k.fixed); len(changed) > 0 {
		return b.Replace(r, c, fmt.Sprintf("PVE cannot change an %s's %s: the replace deletes it and creates it anew", spec.Noun(k.kind), strings.Join(changed, ", ")))
	}
	c.Action = engine.Update
	c.Params = cmp.UpdateParams(c.Diff, r.Params.Map(), lo.Config, nil)
	return nil
}

// liveID is PVE's id of c's entry, read again (a subnet's id follows its
// vnet's zone); "" when it is gone.
func (k *sdnObjKind) liveID(ctx context.Context, cl *pve.Client, c *engine.Change) (string, error) {
	if k.file != "subnets" {
		return c.Resource.Params.Get(k.idKey), nil
	}
	lo, err := k.Current(ctx, cl, c)
	if err != nil || !lo.Exists {
		return "", err
	}
	return sdnLive(lo).ID, nil
}

func (k *sdnObjKind) Create(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	token, err := sdnToken(ctx, x)
	if err != nil {
		return err
	}
	p := c.Resource.Params
	params := toValues(p.Map())
	path := k.createPath
	if k.file == "subnets" {
		params.Del("vnet")
		path = k.listPath(p.Map())
	}
	params.Set("lock-token", token)
	if err := x.Client.Do(ctx, http.MethodPost, path, params, nil); err != nil {
		return fmt.Errorf("create %s: %w", engine.ObjectName(k, c), err)
	}
	return nil
}

func (k *sdnObjKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	token, err := sdnToken(ctx, x)
	if err != nil {
		return err
	}
	id, err := k.liveID(ctx, x.Client, c)
	if err != nil {
		return err
	}
	if id == "" {
		return fmt.Errorf("update %s: it is gone since the plan", engine.ObjectName(k, c))
	}
	params := toValues(c.Params)
	params.Set("lock-token", token)
	if err := x.Client.Do(ctx, http.MethodPut, k.itemPath(c.Resource.Params.Map(), id), params, nil); err != nil {
		return fmt.Errorf("update %s: %w", engine.ObjectName(k, c), err)
	}
	return nil
}

func (k *sdnObjKind) Remove(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	token, err := sdnToken(ctx, x)
	if err != nil {
		return err
	}
	id, err := k.liveID(ctx, x.Client, c)
	if err != nil || id == "" {
		return err // gone already
	}
	params := url.Values{"lock-token": {token}}
	if err := x.Client.Do(ctx, http.MethodDelete, k.itemPath(c.Resource.Params.Map(), id), params, nil); err != nil && !pve.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", engine.ObjectName(k, c), err)
	}
	return nil
}

// Traits: a cluster-wide entry whose changes wait in the cluster's SDN
// scope until the SdnApply commits them.
func (k *sdnObjKind) Traits() engine.KindTraits {
	t := engine.KindTraits{Scope: engine.ScopeCluster, Stages: engine.SDNScope, StagedWhat: "SDN configuration", CommittedBy: spec.KindSdnApply,
		StagedAlready: func(lo *engine.LiveObj) bool { return sdnLive(lo).Pending != "" }}
	if k.file == "subnets" {
		t.Name = func(c *engine.Change) string {
			return c.Resource.Params.Get("subnet") + " on vnet " + c.Resource.Params.Get("vnet")
		}
	}
	return t
}

// ReadCalls: the lists are open to all but show only the entries the
// token may audit or allocate (SDN's API2 index handlers).
func (k *sdnObjKind) ReadCalls(r *spec.Resource) []engine.APICall {
	return []engine.APICall{engine.Call("GET", k.createPath, "to see the "+spec.Noun(k.kind), "vnet", r.Params.Get("vnet")).
		With(engine.NeedAny(k.acl(r.Params.Map(), sdnZoneOf(r.Params.Map(), nil)), "to see the "+spec.Noun(k.kind)+" (PVE lists only those a token may audit)", "SDN.Audit", "SDN.Allocate"))}
}

// ChangeCalls: the lock every write takes (POST /cluster/sdn/lock, SDN.pm
// lock), then the create on the list, the update or delete on the entry.
// Where a call's rule is open to all (vnets, subnets) its handler checks
// SDN.Allocate on the entry's path (the create's parent for a create).
func (k *sdnObjKind) ChangeCalls(c *engine.Change, lo *engine.LiveObj) []engine.APICall {
	p := c.Resource.Params
	why := "to " + c.Action.String() + " the " + spec.Noun(k.kind)
	item := k.createPath + "/{" + k.idKey + "}"
	path := k.acl(p.Map(), sdnZoneOf(p.Map(), lo))
	createPath := path
	if k.createACL != nil {
		createPath = k.createACL(p.Map())
	}
	mk := func(method, tmpl, aclPath string) engine.APICall {
		a := engine.Call(method, tmpl, why, k.idKey, p.Get(k.idKey), "zone", p.Get("zone"), "vnet", p.Get("vnet"))
		if a.Params[k.idKey] == "" {
			a.Params[k.idKey] = c.Resource.Name
		}
		if r, _ := acl.RuleOf(method, tmpl); r.Open() {
			a = a.With(engine.NeedPriv(aclPath, why, "SDN.Allocate"))
		}
		return a
	}
	calls := []engine.APICall{engine.Call("POST", "/cluster/sdn/lock", "to take SDN's lock for the write")}
	switch c.Action {
	case engine.Create:
		calls = append(calls, mk("POST", k.createPath, createPath))
	case engine.Update:
		calls = append(calls, mk("PUT", item, path))
	case engine.Delete:
		calls = append(calls, mk("DELETE", item, path))
	case engine.Replace:
		calls = append(calls, mk("DELETE", item, path), mk("POST", k.createPath, createPath))
	}
	return calls
}

// sdnZoneOf is the zone of a vnet or subnet: the spec's, else the live
// vnet's ("" when neither says).
func sdnZoneOf(p map[string]string, lo *engine.LiveObj) string {
	if z := p["zone"]; z != "" {
		return z
	}
	return sdnLive(lo).Zone
}

// vnetCommitted says whether vnet is in the running SDN configuration
// (listed, and not new in the files).
func vnetCommitted(ctx context.Context, lc *engine.LiveConn, vnet string) (bool, error) {
	rows, err := lc.SDNRows(ctx, "/cluster/sdn/vnets")
	if err != nil {
		return false, err
	}
	for _, row := range rows {
		if row.Get("vnet") == vnet {
			return row.Get("state") != "new", nil
		}
	}
	return false, nil
}
