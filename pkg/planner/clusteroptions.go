package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/planner/marks"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// clusterOptionsKind manages ClusterOptions: datacenter.cfg, one per
// connection (pve-manager PVE/API2/Cluster.pm get_options/set_options,
// pve-cluster src/PVE/DataCenterConfig.pm). Every cluster has it, so it is
// never created or deleted, and destroy leaves it as it is.
//
// "The keys the spec drops" need a memory, and pvectl keeps none outside
// PVE: like kubectl's last-applied annotation, the keys pvectl wrote are
// recorded in the datacenter notes (description) as a block
// "[pvectl-options: keyboard,migration]", beside the user's text. A key
// in that block that the spec no longer writes is deleted; a key pvectl
// never wrote (set by hand, by the GUI) is never touched unless the spec
// writes it as null. The block is written along with a change, never on
// its own, so an imported or unchanged cluster plans clean.
type clusterOptionsKind struct{ engine.NeverCreated }

func (clusterOptionsKind) Traits() engine.KindTraits {
	return engine.KindTraits{Scope: engine.ScopeCluster, Singleton: true}
}

const clusterOptionsPath = "/cluster/options"

// optionsBlockRE finds the block of the keys pvectl wrote.
var optionsBlockRE = lazyre.New(`\[pvectl-options: ([^\]\n]*)\]`)

// optionsMarked are the keys the live description records.
func optionsMarked(desc string) []string {
	m := optionsBlockRE.FindStringSubmatch(desc)
	if m == nil {
		return nil
	}
	return compare.SplitSet(m[1])
}

func (clusterOptionsKind) Observe(ctx context.Context, lc *engine.LiveConn, _ *spec.Resource) (*engine.LiveObj, error) {
	return readClusterOptions(ctx, lc.Client)
}

func (clusterOptionsKind) Current(ctx context.Context, cl *pve.Client, _ *engine.Change) (*engine.LiveObj, error) {
	return readClusterOptions(ctx, cl)
}

// readClusterOptions reads the options as a PUT writes them: the objects
// the reader parsed back into property strings, tag lists ;-joined, the
// description without the newline PVE adds to each comment line.
func readClusterOptions(ctx context.Context, cl *pve.Client) (*engine.LiveObj, error) {
	var raw map[string]json.RawMessage
	if err := cl.Do(ctx, http.MethodGet, clusterOptionsPath, nil, &raw); err != nil {
		return nil, fmt.Errorf("read cluster options: %w", err)
	}
	m, _ := schema.Default().Lookup("PUT", clusterOptionsPath)
	cfg := pve.NewConfig(0)
	for k, v := range raw {
		if k == "allowed-tags" {
			continue
		}
		s, err := optionValue(m, k, v)
		if err != nil {
			return nil, fmt.Errorf("read cluster options: %s: %w", k, err)
		}
		if s != "" {
			cfg.Set(k, s)
		}
	}
	if d, ok := cfg.Lookup("description"); ok {
		cfg.Set("description", strings.TrimRight(d, "\n"))
	}
	return &engine.LiveObj{Exists: true, Config: cfg, Digest: engine.FieldsDigest(cfg)}, nil
}

// optionValue is one answered option as its PUT value.
func optionValue(m *schema.Method, key string, v json.RawMessage) (string, error) {
	var obj map[string]any
	if json.Unmarshal(v, &obj) == nil && obj != nil {
		var p *schema.Param
		if m != nil {
			p, _ = m.Param(key)
		}
		var items []schema.KV
		for _, sk := range slices.Sorted(maps.Keys(obj)) {
			items = append(items, schema.KV{Key: sk, Value: optionScalar(obj[sk], ";")})
		}
		return schema.FormatPropertyString(items, p), nil
	}
	var list []any
	if json.Unmarshal(v, &list) == nil && list != nil {
		return optionScalar(list, ";"), nil
	}
	var cfg *pve.Config
	if err := json.Unmarshal([]byte(`{"v":`+string(v)+`}`), &cfg); err != nil {
		return "", err
	}
	return cfg.Get("v"), nil
}

// optionScalar renders a decoded JSON value as its form value (lists
// joined by sep, as the writer joins tag lists).
func optionScalar(v any, sep string) string {
	switch x := v.(type) {
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, optionScalar(e, sep))
		}
		return strings.Join(parts, sep)
	case float64:
		return schema.FormValue(x)
	case bool:
		if x {
			return "1"
		}
		return "0"
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// optionsWanted are the keys the spec manages: those it writes.
func optionsWanted(r *spec.Resource) []string {
	return r.Params.Keys()
}

func (clusterOptionsKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	cmp := compare.Comparer{M: b.Method("PUT", clusterOptionsPath)}
	want := optionsWanted(r)
	remove := slices.Clone(r.Remove)
	var dropped []string
	for _, k := range optionsMarked(lo.Config.Get("description")) {
		if !slices.Contains(want, k) && !slices.Contains(remove, k) {
			remove, dropped = append(remove, k), append(dropped, k)
		}
	}
	c.Diff = cmp.DiffParams(r.Params.Map(), remove, lo.Config, nil)
	if !engine.UpdateForDiff(c) {
		return nil
	}
	for _, k := range dropped {
		if _, live := lo.Config.Lookup(k); live {
			c.Reasons = append(c.Reasons, k+" removed: pvectl set it (the [pvectl-options] block of the datacenter notes records it) and the spec no longer writes it")
		}
	}
	c.Params = cmp.UpdateParams(c.Diff, r.Params.Map(), lo.Config, func(d engine.FieldDiff) bool { return compare.TopKey(d.Path) == "description" })
	c.Params["description"] = optionsDescription(r, lo.Config.Get("description"), want, remove)
	if !slices.Equal(optionsMarked(lo.Config.Get("description")), want) {
		c.Reasons = append(c.Reasons, "the datacenter notes record the keys pvectl writes: [pvectl-options: "+strings.Join(want, ",")+"]")
	}
	// The description stays: it holds the block.
	if del := slices.DeleteFunc(strings.Split(c.Params["delete"], ","), func(k string) bool { return k == "" || k == "description" }); len(del) > 0 {
		c.Params["delete"] = strings.Join(del, ",")
	} else {
		delete(c.Params, "delete")
	}
	return nil
}

// optionsDescription is the description to write: the spec's text, or the
// user's live text when the spec leaves it alone, then the block naming
// the keys the spec writes.
func optionsDescription(r *spec.Resource, live string, want, remove []string) string {
	text := marks.UserDescription(live)
	if d, ok := r.Params.Lookup("description"); ok {
		text = strings.TrimRight(d, "\n")
	} else if slices.Contains(remove, "description") {
		text = ""
	}
	_, blocks := marks.SplitDescription(live)
	var out []string
	if text != "" {
		out = append(out, text)
	}
	for _, blk := range blocks {
		if !optionsBlockRE.MatchString(blk) {
			out = append(out, blk)
		}
	}
	return strings.Join(append(out, "[pvectl-options: "+strings.Join(want, ",")+"]"), "\n")
}

func (clusterOptionsKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	if err := x.Client.Do(ctx, http.MethodPut, clusterOptionsPath, toValues(c.Params), nil); err != nil {
		return fmt.Errorf("write cluster options: %w", err)
	}
	return nil
}

// ReadCalls: GET /cluster/options is open to all, but without Sys.Audit
// on / its handler answers console and tag-style only (pve-manager
// API2/Cluster.pm get_options).
func (clusterOptionsKind) ReadCalls(*spec.Resource) []engine.APICall {
	return []engine.APICall{engine.Call("GET", clusterOptionsPath, "to read the cluster options").
		With(engine.NeedPriv("/", "to read the cluster options (without it PVE answers two of them)", "Sys.Audit"))}
}

// ChangeCalls: PUT /cluster/options.
func (clusterOptionsKind) ChangeCalls(*engine.Change, *engine.LiveObj) []engine.APICall {
	return []engine.APICall{engine.Call("PUT", clusterOptionsPath, "to change the cluster options")}
}
