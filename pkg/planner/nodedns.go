package planner

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// nodeDNSKind manages NodeDns: a node's resolv.conf (search domain and up
// to three name servers). Every node has one, so it is never created or
// deleted, and destroy leaves it as it is.
type nodeDNSKind struct{ engine.NeverCreated }

// Traits: every node has its DNS settings once (a singleton).
func (nodeDNSKind) Traits() engine.KindTraits {
	return engine.KindTraits{Scope: engine.ScopeNode, Singleton: true}
}

var dnsServers = []string{"dns1", "dns2", "dns3"}

func dnsPath(node string) string { return "/nodes/" + url.PathEscape(node) + "/dns" }

func (nodeDNSKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	node := engine.ParamNode(r)
	if !lc.HasNode(node) {
		return nil, fmt.Errorf("node %q is not in the cluster", node)
	}
	return readDNS(ctx, lc.Client, node)
}

func readDNS(ctx context.Context, cl *pve.Client, node string) (*engine.LiveObj, error) {
	var cfg *pve.Config
	if err := cl.Do(ctx, http.MethodGet, dnsPath(node), nil, &cfg); err != nil {
		return nil, fmt.Errorf("read DNS settings of node %s: %w", node, err)
	}
	if cfg == nil {
		cfg = pve.NewConfig(0)
	}
	return &engine.LiveObj{Exists: true, Node: node, Config: cfg, Digest: engine.FieldsDigest(cfg)}, nil
}

// desiredDNS is what a PUT must carry. PVE rewrites the whole of
// resolv.conf from the call (pve-common INotify.pm update_etc_resolv_conf):
// "search" is required, and a name server the call leaves out is removed.
// So a spec that names any server manages the list, and the others go; a
// spec that names none leaves the live servers alone, and one without a
// search domain keeps the live one.
func desiredDNS(r *spec.Resource, live *pve.Config) map[string]string {
	out := map[string]string{}
	managed := slices.ContainsFunc(dnsServers, func(k string) bool { _, ok := r.Params.Lookup(k); return ok })
	for _, k := range dnsServers {
		v := live.Get(k)
		if managed {
			v = r.Params.Get(k)
		}
		if v != "" {
			out[k] = v
		}
	}
	out["search"] = live.Get("search")
	if s := r.Params.Get("search"); s != "" {
		out["search"] = s
	}
	return out
}

func (nodeDNSKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	want := desiredDNS(r, lo.Config)
	for _, k := range append([]string{"search"}, dnsServers...) {
		before, after := lo.Config.Get(k), want[k]
		if before == after {
			continue
		}
		c.Diff = append(c.Diff, compare.Diff(k, compare.NilIfEmpty(before), compare.NilIfEmpty(after)))
	}
	if len(c.Diff) == 0 {
		c.Action = engine.NoOp
		return nil
	}
	c.Action, c.Params = engine.Update, want
	for _, d := range c.Diff {
		switch {
		case d.After == nil:
			c.Reasons = append(c.Reasons, fmt.Sprintf("%s removed: the spec names other name servers, and PVE drops a server the call leaves out", d.Path))
		case d.Before == nil:
			c.Reasons = append(c.Reasons, d.Path+" added")
		default:
			c.Reasons = append(c.Reasons, d.Path+" changed")
		}
	}
	return nil
}

func (nodeDNSKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	if err := x.Client.Do(ctx, http.MethodPut, dnsPath(c.Node), toValues(c.Params), nil); err != nil {
		return fmt.Errorf("write DNS settings of node %s: %w", c.Node, err)
	}
	return nil
}

func (nodeDNSKind) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	return readDNS(ctx, cl, c.Node)
}
