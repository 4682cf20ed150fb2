package planner

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// downloadKind manages DownloadedImage: a file that a node downloads into
// a storage (POST …/download-url), found by storage, content and file
// name. PVE keeps no record of where a file came from nor of its checksum
// (the content listing has volid, format, size and ctime; volume notes are
// for backups only: pve-storage src/PVE/Storage/DirPlugin.pm), so an
// existing file is what the spec wants: a changed url or checksum is not
// seen. docs/kinds/DownloadedImage.md says how to get a new file.
type downloadKind struct{}

// Traits: a downloaded file is a volume on a node's storage.
func (downloadKind) Traits() engine.KindTraits { return engine.KindTraits{Scope: engine.ScopeNode} }

// downloadNotParams are create parameters that name the target, not the
// download (they are in the path, or the node the change runs on).
var downloadNotParams = map[string]bool{"node": true, "storage": true}

func downloadVolid(r *spec.Resource) string {
	return r.Params.Get("storage") + ":" + r.Params.Get("content") + "/" + r.Params.Get("filename")
}

func volumeObj(node string, vs []pve.Volume, volid string) *engine.LiveObj {
	for _, v := range vs {
		if v.VolID == volid {
			cfg := pve.ConfigOf(map[string]string{"volid": v.VolID, "size": strconv.FormatInt(v.Size, 10)})
			return &engine.LiveObj{Exists: true, Node: node, Config: cfg, Digest: engine.FieldsDigest(cfg)}
		}
	}
	return &engine.LiveObj{Node: node}
}

func (downloadKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	node, err := lc.Node(r)
	if err != nil {
		return nil, err
	}
	vs, err := lc.StorageVolumes(ctx, node, r.Params.Get("storage"), r.Params.Get("content"))
	if err != nil {
		return nil, err
	}
	return volumeObj(node, vs, downloadVolid(r)), nil
}

// Compare: the file is there, and nothing about it can be compared.
func (downloadKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	c.Action = engine.NoOp
	return nil
}

func (downloadKind) Create(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	r := c.Resource
	params := url.Values{}
	for k, v := range r.Params.All() {
		if !downloadNotParams[k] {
			params.Set(k, v)
		}
	}
	vol := downloadVolid(r)
	x.Msg("downloading %s to %s on node %s", r.Params.Get("url"), vol, c.Node)
	if err := x.Client.DownloadURL(ctx, c.Node, r.Params.Get("storage"), params); err != nil {
		return fmt.Errorf("download %s: %w", vol, err)
	}
	return nil
}

func (downloadKind) Update(context.Context, *engine.Execution, *engine.Change) error {
	return fmt.Errorf("internal error: a downloaded file is never updated")
}

func (downloadKind) Remove(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	vol := downloadVolid(c.Resource)
	if err := x.Client.DeleteVolume(ctx, c.Node, c.Resource.Params.Get("storage"), vol); err != nil && !pve.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", vol, err)
	}
	return nil
}

func (downloadKind) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	r := c.Resource
	vs, err := cl.StorageContent(ctx, c.Node, r.Params.Get("storage"), r.Params.Get("content"))
	if err != nil && !pve.IsNotFound(err) { // a storage the plan makes
		return nil, err
	}
	return volumeObj(c.Node, vs, downloadVolid(r)), nil
}
