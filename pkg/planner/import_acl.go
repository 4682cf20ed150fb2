package planner

import (
	"context"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/spec"
)

// ACL entries are imported one grant a document (path, principal, role),
// as the kind manages them; propagate only when it is not PVE's default.
// The user, token and pool a grant names are edges Load finds itself.

// ImportLists: GET /access/acl.
func (aclKind) ImportLists(lc *engine.LiveConn, _ string) []engine.ListRead {
	return []engine.ListRead{engine.ACLRead(lc)}
}

func (aclKind) Importable(ctx context.Context, ic *engine.ImportCtx, _ string) ([]engine.ImportItem, error) {
	entries, err := ic.Lc.ACLList(ctx)
	if err != nil {
		return nil, err
	}
	var out []engine.ImportItem
	for _, e := range entries {
		params := map[string]string{"path": e.Path, e.Type + "s": e.UGID, "roles": e.Role}
		r := &spec.Resource{Kind: spec.KindACL, Name: aclDocName(e.Path, e.UGID, e.Role), State: spec.Present, Params: spec.ParamsOf(params)}
		out = append(out, engine.ImportItem{R: r, Ids: []string{e.Path + ":" + e.UGID + ":" + e.Role, r.Name}})
	}
	return out, nil
}

var aclNameUnsafe = lazyre.New(`[^a-z0-9]+`)

// aclDocName names a grant's document: "ci-pve-deploy-pool-lab-pvevmadmin".
func aclDocName(path, ugid, role string) string {
	s := strings.ToLower(ugid + "-" + path + "-" + role)
	return strings.Trim(aclNameUnsafe.ReplaceAllString(s, "-"), "-")
}

// ImportPerms: GET /access/acl lists only the entries on paths where the
// token may change permissions, or every one with Sys.Audit on /access
// (pve-access-control API2/ACL.pm read_acl).
func (aclKind) ImportPerms(string) []engine.PermNeed {
	return []engine.PermNeed{engine.NeedPriv("/access", "to list every ACL entry (PVE lists only those on paths whose permissions a token may change)", "Sys.Audit")}
}

func (aclKind) ImportDoc(ic *engine.ImportCtx, r *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	path, typ, ugid, role, _ := spec.ACLGrant(r)
	d := &engine.ImportedDoc{Kind: spec.KindACL, Name: r.Name}
	d.Spec = []engine.Field{{Key: "path", Value: path}, {Key: typ + "s", Value: ugid}, {Key: "roles", Value: role}}
	if lo.Config.Get("propagate") == "0" {
		d.Spec = append(d.Spec, engine.Field{Key: "propagate", Value: false})
	}
	return d, nil
}
