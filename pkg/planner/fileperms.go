package planner

import (
	"github.com/pvectl/pvectl/pkg/planner/internal/engine"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The calls of the kinds that keep files on a storage (DownloadedImage,
// ConfigDriveISO) and of a node's DNS settings, whose needs the engine
// derives from the apidoc's rules (permcalls.go) and pve-storage's
// handler checks declared here.

// contentRead: GET /nodes/{node}/storage/{storage}/content lists the
// storage's volumes.
func contentRead(node, storage, why string) engine.APICall {
	return engine.Call("GET", "/nodes/{node}/storage/{storage}/content", why, "node", node, "storage", storage)
}

// contentDelete: DELETE /nodes/{node}/storage/{storage}/content/{volume}
// is open to all; its handler checks Datastore.Allocate on the storage
// for what is not a backup (pve-storage API2/Storage/Content.pm delete).
func contentDelete(node, storage, why string) engine.APICall {
	return engine.Call("DELETE", "/nodes/{node}/storage/{storage}/content/{volume}", why, "node", node, "storage", storage).
		With(engine.NeedPriv("/storage/"+storage, why, "Datastore.Allocate"))
}

func (downloadKind) ReadCalls(r *spec.Resource) []engine.APICall {
	return []engine.APICall{contentRead(r.Params.Get("node"), r.Params.Get("storage"), "to see whether the file is on the storage")}
}

// ChangeCalls: POST .../download-url (its rule: the storage's
// Datastore.AllocateTemplate and, since a download probes the node's
// network, Sys.Audit and Sys.Modify on / or Sys.AccessNetwork on the
// node); a delete or replace removes the file.
func (downloadKind) ChangeCalls(c *engine.Change, _ *engine.LiveObj) []engine.APICall {
	storage := c.Resource.Params.Get("storage")
	download := engine.Call("POST", "/nodes/{node}/storage/{storage}/download-url", "to download the file onto the storage",
		"node", c.Node, "storage", storage)
	switch c.Action {
	case engine.Delete:
		return []engine.APICall{contentDelete(c.Node, storage, "to delete the file")}
	case engine.Replace:
		return []engine.APICall{download, contentDelete(c.Node, storage, "to delete the file it replaces")}
	}
	return []engine.APICall{download}
}

func (configDriveKind) ReadCalls(r *spec.Resource) []engine.APICall {
	return []engine.APICall{contentRead(r.Params.Get("node"), r.Params.Get("storage"), "to find the config drive's versions on the storage")}
}

// ChangeCalls: an upload (POST .../upload); a new version removes the old
// ones once no VM uses them, and a destroy removes them all.
func (configDriveKind) ChangeCalls(c *engine.Change, _ *engine.LiveObj) []engine.APICall {
	storage := c.Resource.Params.Get("storage")
	if c.Action == engine.Delete {
		return []engine.APICall{contentDelete(c.Node, storage, "to delete the config drive's files")}
	}
	calls := []engine.APICall{engine.Call("POST", "/nodes/{node}/storage/{storage}/upload", "to upload the config drive", "node", c.Node, "storage", storage)}
	if c.Action != engine.Create || len(driveStateOf(c).Stale) > 0 {
		calls = append(calls, contentDelete(c.Node, storage, "to delete the versions it replaces"))
	}
	return calls
}

func dnsNode(r *spec.Resource) string {
	if n := r.Params.Get("node"); n != "" {
		return n
	}
	return r.Name
}

// ReadCalls: GET /nodes/{node}/dns.
func (nodeDNSKind) ReadCalls(r *spec.Resource) []engine.APICall {
	return []engine.APICall{engine.Call("GET", "/nodes/{node}/dns", "to read the node's DNS settings", "node", dnsNode(r))}
}

// ChangeCalls: PUT /nodes/{node}/dns.
func (nodeDNSKind) ChangeCalls(c *engine.Change, _ *engine.LiveObj) []engine.APICall {
	return []engine.APICall{engine.Call("PUT", "/nodes/{node}/dns", "to change the node's DNS settings", "node", dnsNode(c.Resource))}
}
