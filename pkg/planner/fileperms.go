package planner

import (
	"github.com/pvectl/pvectl/pkg/spec"
)

// Permissions of the kinds that keep files on a storage (DownloadedImage,
// ConfigDriveISO) and of a node's DNS settings, as the apidoc's rules and
// pve-storage's handlers check them.

// storageContentRead: listing a storage's content checks Datastore.Audit
// or Datastore.AllocateSpace on it (pve-storage API2/Storage/Content.pm
// index).
func storageContentRead(storage, why string) permNeed {
	return needAny("/storage/"+storage, why, "Datastore.Audit", "Datastore.AllocateSpace")
}

// storageFileDelete: deleting a volume checks Datastore.Allocate on the
// storage (Content.pm delete; backups aside).
func storageFileDelete(storage, why string) permNeed {
	return need("/storage/"+storage, why, "Datastore.Allocate")
}

func (downloadKind) readPerms(r *spec.Resource) []permNeed {
	return []permNeed{storageContentRead(r.Params["storage"], "to see whether the file is on the storage")}
}

// changePerms: download-url checks Datastore.AllocateTemplate on the
// storage and, since a download probes the node's network, Sys.Modify on /
// or Sys.AccessNetwork on the node (its rule in PVE's apidoc).
func (downloadKind) changePerms(c *Change, _ *liveObj) []permNeed {
	storage := c.Resource.Params["storage"]
	switch c.Action {
	case NoOp:
		return nil
	case Delete:
		return []permNeed{storageFileDelete(storage, "to delete the file")}
	}
	net := need("/nodes/"+c.Node, "to let the node download (a download probes the node's network)", "Sys.AccessNetwork")
	net.alt = []permNeed{need("/", "to let the node download", "Sys.Audit", "Sys.Modify")}
	needs := []permNeed{need("/storage/"+storage, "to download the file onto the storage", "Datastore.AllocateTemplate"), net}
	if c.Action == Replace {
		needs = append(needs, storageFileDelete(storage, "to delete the file it replaces"))
	}
	return needs
}

func (configDriveKind) readPerms(r *spec.Resource) []permNeed {
	return []permNeed{storageContentRead(r.Params["storage"], "to find the config drive's versions on the storage")}
}

// changePerms: an upload checks Datastore.AllocateTemplate on the storage
// (Content.pm upload's rule); a new version removes the old ones once no
// VM uses them, and a destroy removes them all: Datastore.Allocate.
func (configDriveKind) changePerms(c *Change, _ *liveObj) []permNeed {
	storage := c.Resource.Params["storage"]
	switch c.Action {
	case NoOp:
		return nil
	case Delete:
		return []permNeed{storageFileDelete(storage, "to delete the config drive's files")}
	}
	needs := []permNeed{need("/storage/"+storage, "to upload the config drive", "Datastore.AllocateTemplate")}
	if c.Action != Create || len(driveStateOf(c).Stale) > 0 {
		needs = append(needs, storageFileDelete(storage, "to delete the versions it replaces"))
	}
	return needs
}

func dnsNode(r *spec.Resource) string {
	if n := r.Params["node"]; n != "" {
		return n
	}
	return r.Name
}

// readPerms: GET /nodes/{node}/dns checks Sys.Audit on the node.
func (nodeDNSKind) readPerms(r *spec.Resource) []permNeed {
	return []permNeed{need("/nodes/"+dnsNode(r), "to read the node's DNS settings", "Sys.Audit")}
}

// changePerms: PUT /nodes/{node}/dns checks Sys.Modify on the node.
func (nodeDNSKind) changePerms(c *Change, _ *liveObj) []permNeed {
	if c.Action == NoOp {
		return nil
	}
	return []permNeed{need("/nodes/"+dnsNode(c.Resource), "to change the node's DNS settings", "Sys.Modify")}
}
