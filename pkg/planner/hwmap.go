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
	"github.com/pvectl/pvectl/pkg/spec"
)

// hwmapKind manages HardwareMapping: a resource mapping of
// mapping/{pci,usb,directory}.cfg (pve-manager
// PVE/API2/Cluster/Mapping/{PCI,USB,Dir}.pm, pve-guest-common
// src/PVE/Mapping/*.pm). Each type is a list, a POST, and GET, PUT and
// DELETE on /cluster/mapping/<type>/<id>. Every write carries the whole
// map (check_config with create set: map is required in an update too);
// the entries are compared as a set of property strings in one key
// order. The list shows only the mappings the token holds Mapping.Audit,
// .Use or .Modify on, so reading needs one of them on the mapping.
type hwmapKind struct{}

// hwmapSettings are the settings compare looks at besides map.
var hwmapSettings = []string{"description", "mdev", "live-migration-capable"}

func hwmapItemPath(typ, id string) string {
	return engine.HWMapListPath(typ) + "/" + url.PathEscape(id)
}

func hwmapID(r *spec.Resource) string {
	if id := r.Params.Get("id"); id != "" {
		return id
	}
	return r.Name
}

func hwmapType(r *spec.Resource) string { return spec.MappingKeys(r).Type }

// hwmapEntries turns the map PVE answers (a JSON array, as pve.Config
// keeps it) into normalized entries, sorted.
func hwmapEntries(raw string) []string {
	var list []string
	if err := json.Unmarshal([]byte(raw), &list); err != nil && raw != "" {
		list = []string{raw}
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		if norm, _, err := spec.NormalizeMappingEntry(e); err == nil {
			out = append(out, norm)
		} else {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

// hwmapFind is the mapping id among rows, its settings with map as
// normalized entries joined by newlines.
func hwmapFind(rows []*pve.Config, id string) *engine.LiveObj {
	for _, row := range rows {
		if row.Get("id") != id {
			continue
		}
		cfg := pve.NewConfig(0)
		for _, key := range hwmapSettings {
			if v, ok := row.Lookup(key); ok {
				cfg.Set(key, v)
			}
		}
		cfg.Set("map", strings.Join(hwmapEntries(row.Get("map")), "\n"))
		return &engine.LiveObj{Exists: true, Config: cfg, Digest: engine.FieldsDigest(cfg)}
	}
	return &engine.LiveObj{}
}

func (hwmapKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	rows, err := lc.HWMapRows(ctx, hwmapType(r))
	if err != nil {
		return nil, err
	}
	return hwmapFind(rows, hwmapID(r)), nil
}

func (hwmapKind) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	rows, err := engine.ReadHWMaps(ctx, cl, hwmapType(c.Resource))
	if err != nil {
		return nil, err
	}
	return hwmapFind(rows, hwmapID(c.Resource)), nil
}

func (hwmapKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	typ := hwmapType(r)
	cmp := compare.Comparer{M: b.Method("POST", engine.HWMapListPath(typ))}
	desired := map[string]string{}
	for _, key := range hwmapSettings {
		if v, ok := r.Params.Lookup(key); ok {
			desired[key] = v
		}
	}
	diffs := cmp.DiffParams(desired, r.Remove, lo.Config, map[string]bool{"map": true})
	want := spec.MappingKeys(r).Entries
	have := strings.Split(lo.Config.Get("map"), "\n")
	if lo.Config.Get("map") == "" {
		have = nil
	}
	if !slices.Equal(want, have) {
		diffs = append(diffs, engine.FieldDiff{Path: "map", Before: have, After: want})
	}
	c.Diff = diffs
	if len(diffs) == 0 {
		c.Action = engine.NoOp
		return nil
	}
	c.Reasons = compare.Reasons(diffs)
	c.Action = engine.Update
	var scalar []engine.FieldDiff
	for _, d := range diffs {
		if d.Path != "map" {
			scalar = append(scalar, d)
		}
	}
	c.Params = cmp.UpdateParams(scalar, desired, lo.Config, nil)
	// Every update carries the whole map (PVE requires it).
	c.Params["map"] = strings.Join(want, "\n")
	return nil
}

// hwmapValues are the form values of a write: the params, and map as
// one value per entry (an array on the wire).
func hwmapValues(params map[string]string) url.Values {
	v := url.Values{}
	for key, x := range params {
		if key == "map" {
			for _, e := range strings.Split(x, "\n") {
				if e != "" {
					v.Add("map", e)
				}
			}
			continue
		}
		v.Set(key, x)
	}
	return v
}

func (hwmapKind) Create(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	r := c.Resource
	typ, id := hwmapType(r), hwmapID(r)
	params := map[string]string{"id": id, "map": strings.Join(spec.MappingKeys(r).Entries, "\n")}
	for _, key := range hwmapSettings {
		if v, ok := r.Params.Lookup(key); ok {
			params[key] = v
		}
	}
	if err := x.Client.Do(ctx, http.MethodPost, engine.HWMapListPath(typ), hwmapValues(params), nil); err != nil {
		return fmt.Errorf("create %s mapping %s: %w", typ, id, err)
	}
	return nil
}

func (hwmapKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	typ, id := hwmapType(c.Resource), hwmapID(c.Resource)
	if err := x.Client.Do(ctx, http.MethodPut, hwmapItemPath(typ, id), hwmapValues(c.Params), nil); err != nil {
		return fmt.Errorf("update %s mapping %s: %w", typ, id, err)
	}
	return nil
}

func (hwmapKind) Remove(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	typ, id := hwmapType(c.Resource), hwmapID(c.Resource)
	if err := x.Client.Do(ctx, http.MethodDelete, hwmapItemPath(typ, id), nil, nil); err != nil && !pve.IsNotFound(err) {
		return fmt.Errorf("delete %s mapping %s: %w", typ, id, err)
	}
	return nil
}

// ReadCalls: GET /cluster/mapping/<type> is open to all but leaves out
// what the token holds none of Mapping.Audit, .Use, .Modify on
// (Mapping/*.pm index); a mapping not seen would be planned as new.
func (hwmapKind) ReadCalls(r *spec.Resource) []engine.APICall {
	typ := hwmapType(r)
	return []engine.APICall{engine.Call("GET", "/cluster/mapping/"+typ, "to see the mapping").
		With(engine.NeedAny("/mapping/"+typ+"/"+hwmapID(r), "to see the mapping (PVE lists only those a token may audit, use or modify)",
			"Mapping.Audit", "Mapping.Use", "Mapping.Modify"))}
}

// ChangeCalls: POST /cluster/mapping/<type>, PUT and DELETE on the
// mapping (Mapping/*.pm create, update, delete).
func (hwmapKind) ChangeCalls(c *engine.Change, _ *engine.LiveObj) []engine.APICall {
	typ, id := hwmapType(c.Resource), hwmapID(c.Resource)
	why := "to " + c.Action.String() + " " + typ + " mapping " + id
	post := engine.Call("POST", "/cluster/mapping/"+typ, why, "id", id)
	del := engine.Call("DELETE", "/cluster/mapping/"+typ+"/{id}", why, "id", id)
	switch c.Action {
	case engine.Create:
		return []engine.APICall{post}
	case engine.Update:
		return []engine.APICall{engine.Call("PUT", "/cluster/mapping/"+typ+"/{id}", why, "id", id)}
	case engine.Delete:
		return []engine.APICall{del}
	case engine.Replace:
		return []engine.APICall{del, post}
	}
	return nil
}

// Traits: a cluster-wide entry of a mapping config.
func (hwmapKind) Traits() engine.KindTraits { return engine.KindTraits{Scope: engine.ScopeCluster} }

// fieldEffect: type names which of PVE's three mapping files the mapping
// is in, so a new one is another mapping; every update carries the whole
// map.
func (hwmapKind) fieldEffect(_ *spec.KindSpec, key, _ string) (Effect, bool) {
	switch key {
	case "type":
		return Effect{Kind: Names, Why: "pci, usb and dir mappings are three configs in PVE, one API each"}, true
	case "map":
		return Effect{Kind: InPlace, How: "PUT /cluster/mapping/<type>/{id}", Note: "the whole map is sent (PVE requires it in every update); entries compare as a set"}, true
	case "description":
		return Effect{Kind: InPlace, How: "PUT /cluster/mapping/<type>/{id}", Note: "with the whole map"}, true
	}
	return Effect{}, false
}
