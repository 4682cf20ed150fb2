package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// A guest's prerequisites: its pool, the bridges of its NICs on its
// node, the storages its new disks are allocated on (content images for
// a VM, rootdir for a container), and the volumes it uses (ISO images,
// an import source, a container's template). For a guest that exists on
// its node, only what its spec changes: what it has now exists already.

// Prereqs lists what r's guest needs on node; lo is the guest as it is
// (nil, absent or on another node: made anew, so everything).
func (g guest) Prereqs(r *spec.Resource, node string, lo *engine.LiveObj) []engine.Prereq {
	fresh := lo == nil || !lo.Exists || lo.Node != node
	var live *pve.Config
	livePool := ""
	if !fresh {
		live, livePool = lo.Config, liveOf(lo).Pool
	}
	var out []engine.Prereq
	if pool := r.Params.Get("pool"); pool != "" && (fresh || livePool != pool) {
		out = append(out, poolPrereq("pool", pool))
	}
	for _, key := range r.Params.Keys() {
		val := r.Params.Get(key)
		switch {
		case netKeyRe.MatchString(key):
			if br := subKey(val, "bridge"); br != "" && (fresh || subKey(live.Get(key), "bridge") != br) {
				out = append(out, bridgePrereq(key, br, node))
			}
		case g.isDisk(key):
			if key == spec.ConfigDriveSlot && spec.Guest(r).ConfigDrive != nil {
				continue // the ConfigDriveISO of the specs makes it
			}
			out = append(out, g.diskPrereqs(r, key, val, live.Get(key), node, fresh)...)
		}
	}
	gk := spec.Guest(r)
	starts := gk.Running != nil && *gk.Running
	if p := spec.Provisioning(r); p != nil && len(p.Provision) > 0 {
		starts = true
	}
	for _, m := range spec.GuestMappings(r) {
		if fresh || live.Get(m.Key) != r.Params.Get(m.Key) {
			out = append(out, mappingPrereq(m, node, starts))
		}
	}
	if fresh {
		out = append(out, g.createPrereqs(r, node)...)
	}
	return out
}

// diskPrereqs are what one drive or mount point needs: its storage for a
// new allocation ("local-lvm:32"), its volume when it names one, and an
// import source. Only what is new: a fresh guest, a drive it lacks, or
// one whose volume or storage changes.
func (g guest) diskPrereqs(r *spec.Resource, key, val, old, node string, fresh bool) []engine.Prereq {
	file := driveFile(val)
	if file == "" || file == "none" || file == "cdrom" || strings.HasPrefix(file, "/") {
		return nil
	}
	oldFile := driveFile(old)
	added := fresh || old == ""
	storage, volname, hasStorage := strings.Cut(file, ":")
	content := g.diskContent
	var out []engine.Prereq
	switch m := newDiskRe.FindStringSubmatch(file); {
	case m != nil: // a new allocation: storage:size
		sid := m[2]
		if sid == "" {
			sid = g.defaultStorage(r)
		}
		oldStorage, _, _ := strings.Cut(oldFile, ":")
		if sid != "" && (added || oldStorage != sid) {
			out = append(out, storagePrereq(key, sid, content, node))
		}
	case hasStorage && volname == "cloudinit": // a cloud-init drive PVE allocates
		if added {
			out = append(out, storagePrereq(key, storage, "images", node))
		}
	case hasStorage && (added || oldFile != file):
		if c := volumeContent(file); c != "images" {
			out = append(out, volumePrereq(key, file, c, node))
		} else {
			// Another guest's disk, or a volume listed only to the
			// guests' auditors: its storage is what can be judged.
			out = append(out, storagePrereq(key, storage, content, node))
		}
	}
	if src := subKey(val, "import-from"); src != "" && added && !strings.HasPrefix(src, "/") && strings.Contains(src, ":") {
		if c := volumeContent(src); c != "images" {
			out = append(out, volumePrereq(key+".import-from", src, c, node))
		} else if sid, _, _ := strings.Cut(src, ":"); !ownedImageRe.MatchString(src) {
			out = append(out, storagePrereq(key+".import-from", sid, "images", node))
		}
	}
	return out
}

var (
	netKeyRe = lazyre.New(`^net\d+$`)
	mpKeyRe  = lazyre.New(`^mp\d+$`)
)

// subKey is a property string's sub-key ("" when absent).
func subKey(val, key string) string {
	for _, kv := range splitProps(val) {
		if kv.Key == key {
			return kv.Value
		}
	}
	return ""
}

// poolPrereq needs pool to exist. /cluster/resources lists the pools the
// token may audit.
func poolPrereq(key, pool string) engine.Prereq {
	return engine.Prereq{Key: key, What: "pool " + pool, Kind: spec.KindPool, Value: pool,
		Live: func(lc *engine.LiveConn) string {
			if !lc.Sees("/pool/"+pool, "Pool.Audit") {
				return ""
			}
			if lc.PoolListed(pool) {
				return ""
			}
			return fmt.Sprintf("pool %s does not exist (in PVE or in these specs)", pool)
		}}
}

// bridgePrereq needs bridge on node: a bridge of the node's network
// (staged included: a NetworkApply of the specs commits it first) or an
// SDN vnet, as GET /nodes/{node}/network?type=any_bridge lists them to a
// token that may use or audit them (pve-manager API2/Network.pm index).
func bridgePrereq(key, bridge, node string) engine.Prereq {
	path := "/sdn/zones/localnetwork/" + bridge
	return engine.Prereq{Key: key, What: fmt.Sprintf("bridge %s on node %s", bridge, node), Kind: spec.KindLinuxBridge, Value: bridge, Node: node,
		AnyNodeKind: spec.KindSdnVnet,
		Read: func(ctx context.Context, lc *engine.LiveConn) error {
			if !lc.HasNode(node) {
				return nil
			}
			if !lc.Sees(path, "SDN.Audit", "SDN.Use") {
				// It may be a vnet of another zone, whose use is granted
				// there: the vnet list says which (sdn_vnetzone.go).
				_, _ = lc.SDNRows(ctx, "/cluster/sdn/vnets")
				return nil
			}
			_, err := lc.Bridges(ctx, node)
			return err
		},
		Live: func(lc *engine.LiveConn) string {
			list, read := lc.Pre.Bridges[node]
			if !read || !lc.Sees(path, "SDN.Audit", "SDN.Use") {
				return ""
			}
			for _, c := range list {
				if c.Get("iface") == bridge {
					return ""
				}
			}
			return fmt.Sprintf("bridge %s does not exist on node %s (in PVE or in these specs)", bridge, node)
		}}
}

// storagePrereq needs storage on node, taking content. /cluster/resources
// lists a storage once per node where it is enabled, with its content
// types, to a token with Datastore.Audit on it (Cluster.pm resources).
func storagePrereq(key, storage, content, node string) engine.Prereq {
	what := fmt.Sprintf("storage %s for %s on node %s", storage, content, node)
	return engine.Prereq{Key: key, What: what, Kind: spec.KindStorage, Value: storage,
		FromSpec: func(p *spec.Resource) string { return specStorageTakes(p, storage, content, node) },
		Live:     func(lc *engine.LiveConn) string { return storageTakes(lc, storage, content, node) }}
}

// storageTakes judges storage on node for content from the live rows.
func storageTakes(lc *engine.LiveConn, storage, content, node string) string {
	if !lc.Sees("/storage/"+storage, "Datastore.Audit") {
		return ""
	}
	var on []string
	for _, row := range lc.StorageRows(storage) {
		if row.Node != node {
			on = append(on, row.Node)
			continue
		}
		if row.Content != "" && !slices.Contains(splitContent(row.Content), content) {
			return fmt.Sprintf("storage %s does not take content %s (it takes %s)", storage, content, row.Content)
		}
		return ""
	}
	if len(on) > 0 {
		slices.Sort(on)
		return fmt.Sprintf("storage %s is not available on node %s (only on %s)", storage, node, strings.Join(on, ", "))
	}
	return fmt.Sprintf("storage %s does not exist, or is disabled (in PVE or in these specs)", storage)
}

// specStorageTakes judges a Storage of the specs by what it sets.
func specStorageTakes(p *spec.Resource, storage, content, node string) string {
	if p.Params.Get("disable") == "1" {
		return fmt.Sprintf("storage %s is disabled (%s)", storage, p.Address())
	}
	if nodes := p.Params.Get("nodes"); nodes != "" && !slices.Contains(splitContent(nodes), node) {
		return fmt.Sprintf("storage %s is not available on node %s (%s nodes: %s)", storage, node, p.Address(), nodes)
	}
	if c := p.Params.Get("content"); c != "" && !slices.Contains(splitContent(c), content) {
		return fmt.Sprintf("storage %s does not take content %s (%s content: %s)", storage, content, p.Address(), c)
	}
	return ""
}

func splitContent(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' })
}

// volumePrereq needs the volume volid (of content) on node: its storage
// there, taking the content, and the volume itself — or a file of the
// specs that makes it (a DownloadedImage).
func volumePrereq(key, volid, content, node string) engine.Prereq {
	storage, _, _ := strings.Cut(volid, ":")
	return engine.Prereq{Key: key, What: fmt.Sprintf("%s on node %s", volid, node), Kind: spec.KindDownloadedImage, Value: volid, Node: node,
		Read: func(ctx context.Context, lc *engine.LiveConn) error {
			if !lc.Sees("/storage/"+storage, "Datastore.Audit", "Datastore.AllocateSpace") || !lc.HasNode(node) {
				return nil
			}
			_, err := lc.StorageVolumes(ctx, node, storage, content)
			return err
		},
		Live: func(lc *engine.LiveConn) string {
			if msg := storageTakes(lc, storage, content, node); msg != "" {
				return msg
			}
			vs, read := lc.Volumes[node+"\x00"+storage+"\x00"+content]
			if !read || !lc.Sees("/storage/"+storage, "Datastore.Audit", "Datastore.AllocateSpace") {
				return ""
			}
			for _, v := range vs {
				if v.VolID == volid {
					return ""
				}
			}
			return fmt.Sprintf("%s does not exist on node %s (in PVE or in these specs)", volid, node)
		}}
}

// volumeContent is the content type a volume id's name says: iso/…,
// vztmpl/…, import/…, snippets/…; else a guest image.
func volumeContent(volid string) string {
	_, name, _ := strings.Cut(volid, ":")
	if dir, _, ok := strings.Cut(name, "/"); ok {
		switch dir {
		case "iso", "vztmpl", "import", "snippets":
			return dir
		}
	}
	return "images"
}
