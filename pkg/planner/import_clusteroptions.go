package planner

import (
	"context"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/planner/marks"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The cluster's options are imported as its ClusterOptions: the keys
// datacenter.cfg has, without mac_prefix when it is PVE's default (the
// reader answers it unset too) and without pvectl's block in the notes.

func (clusterOptionsKind) importable(ctx context.Context, ic *importCtx, _ string) ([]importItem, error) {
	r := &spec.Resource{Kind: spec.KindClusterOptions, Name: "cluster", State: spec.Present, Params: spec.NewParams(0)}
	return []importItem{{r: r, ids: []string{"cluster"}}}, nil
}

// importPerms: GET /cluster/options answers every option with Sys.Audit on / only.
func (clusterOptionsKind) importPerms(string) []permNeed {
	return []permNeed{need("/", "to read the cluster options", "Sys.Audit")}
}

func (clusterOptionsKind) importDoc(ic *importCtx, _ *spec.Resource, lo *liveObj) (*ImportedDoc, error) {
	d := &ImportedDoc{Kind: spec.KindClusterOptions, Name: "cluster"}
	cfg := lo.Config.Clone()
	if cfg.Get("mac_prefix") == "BC:24:11" {
		cfg.Delete("mac_prefix")
	}
	if text := marks.UserDescription(cfg.Get("description")); text != "" {
		cfg.Set("description", text)
	} else {
		cfg.Delete("description")
	}
	d.Spec = ic.Fields(d, ic.method("PUT", clusterOptionsPath), cfg, "cluster_options", func(k string) bool { return k == "delete" }, importdoc.KeepSub)
	if len(d.Spec) == 0 {
		return nil, nil
	}
	return d, nil
}
