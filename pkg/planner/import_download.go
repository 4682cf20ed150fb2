package planner

import (
	"context"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Files on storages (ISO images, container templates, disk images to
// import) are imported as DownloadedImage documents with managed: false:
// PVE does not record where a file came from, so pvectl can only read
// them, and guests that use them depend on them. A config drive pvectl
// built is not one (ConfigDriveISO is derived from its spec's user data,
// which is not imported).

// downloadContents are the content types a DownloadedImage can be.
var downloadContents = []string{"iso", "vztmpl", "import"}

// configDriveFile is the name pvectl gives a config drive it built:
// <name>-<12 hex of its content's hash>.iso.
var configDriveFile = lazyre.New(`-[0-9a-f]{12}\.iso$`)

func (downloadKind) Importable(ctx context.Context, ic *engine.ImportCtx, node string) ([]engine.ImportItem, error) {
	var out []engine.ImportItem
	for _, row := range ic.Lc.Resources {
		if row.Type != "storage" || (node != "" && row.Node != node) {
			continue
		}
		for _, content := range downloadContents {
			if !slices.Contains(compare.SplitSet(row.Content), content) {
				continue
			}
			vs, err := ic.Lc.StorageVolumes(ctx, row.Node, row.Storage, content)
			if err != nil {
				return nil, err
			}
			for _, v := range vs {
				_, file, ok := strings.Cut(v.VolID, ":"+content+"/")
				if !ok || strings.Contains(file, "/") {
					continue
				}
				if content == "iso" && configDriveFile.MatchString(file) {
					continue
				}
				r := &spec.Resource{Kind: spec.KindDownloadedImage, Name: file, State: spec.Present, ReadOnly: true,
					Params: spec.ParamsOf(map[string]string{"node": row.Node, "storage": row.Storage, "content": content, "filename": file})}
				out = append(out, engine.ImportItem{R: r, Ids: []string{v.VolID, row.Node + "/" + v.VolID, file}})
			}
		}
	}
	return out, nil
}

// ImportLists: the content lists of the storages that hold files.
func (downloadKind) ImportLists(lc *engine.LiveConn, node string) []engine.ListRead {
	return engine.VolumeReads(lc, node, downloadContents)
}

// ImportPerms: a storage's content is listed only with Datastore.Audit
// or Datastore.AllocateSpace on it.
func (downloadKind) ImportPerms(string) []engine.PermNeed {
	return []engine.PermNeed{engine.NeedAny("/storage", "to list the files on the storages", "Datastore.Audit", "Datastore.AllocateSpace")}
}

func (downloadKind) ImportDoc(ic *engine.ImportCtx, r *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	p := r.Params
	file, node, storage := p.Get("filename"), lo.Node, p.Get("storage")
	d := &engine.ImportedDoc{Kind: spec.KindDownloadedImage, ReadOnly: true,
		Name: ic.DocName(spec.KindDownloadedImage, file, file+"-"+storage+"-"+node)}
	d.Spec = []engine.Field{{Key: "node", Value: node}, {Key: "storage", Value: storage}, {Key: "content", Value: p.Get("content")}, {Key: "filename", Value: file}}
	// No implicit edge leads from a file to its storage.
	d.DependsOn = append(d.DependsOn, spec.KindStorage+"/"+storage)
	return d, nil
}
