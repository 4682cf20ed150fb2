package planner

import (
	"context"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/planner/marks"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The cluster's options are imported as its ClusterOptions: the keys
// datacenter.cfg has, without mac_prefix when it is PVE's default (the
// reader answers it unset too) and without pvectl's block in the notes.

func (clusterOptionsKind) Importable(ctx context.Context, ic *engine.ImportCtx, _ string) ([]engine.ImportItem, error) {
	r := &spec.Resource{Kind: spec.KindClusterOptions, Name: "cluster", State: spec.Present, Params: spec.NewParams(0)}
	return []engine.ImportItem{{R: r, Ids: []string{"cluster"}}}, nil
}

// ImportPerms: GET /cluster/options answers every option with Sys.Audit on / only.
func (clusterOptionsKind) ImportPerms(string) []engine.PermNeed {
	return []engine.PermNeed{engine.NeedPriv("/", "to read the cluster options", "Sys.Audit")}
}

func (clusterOptionsKind) ImportDoc(ic *engine.ImportCtx, _ *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	d := &engine.ImportedDoc{Kind: spec.KindClusterOptions, Name: "cluster"}
	cfg := lo.Config.Clone()
	if cfg.Get("mac_prefix") == "BC:24:11" {
		cfg.Delete("mac_prefix")
	}
	if text := marks.UserDescription(cfg.Get("description")); text != "" {
		cfg.Set("description", text)
	} else {
		cfg.Delete("description")
	}
	d.Spec = ic.Fields(d, ic.Method("PUT", clusterOptionsPath), cfg, "cluster_options", func(k string) bool { return k == "delete" }, importdoc.KeepSub)
	if len(d.Spec) == 0 {
		return nil, nil
	}
	return d, nil
}
