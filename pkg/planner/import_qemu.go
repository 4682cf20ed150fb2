package planner

import (
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/spec"
)

// qemuGenerated are what PVE writes into a new VM's config by itself: a
// VM generation id, the SMBIOS UUID, its creation stamp. A copy with the
// same ones would clash with the original; --with-generated keeps them.
var qemuGenerated = map[string]bool{"vmgenid": true, "smbios1": true, "meta": true}

// ImportDoc writes a VM: its config's create parameters, the disks it
// owns as STORAGE:SIZE, pool and power state. A template is a QemuVM with
// template: true (pvectl's Template kind bakes one from a spec; one found
// in PVE is only its result).
func (k qemuKind) ImportDoc(ic *engine.ImportCtx, _ *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	d := k.guestDoc(ic, spec.KindQemuVM, lo, func(key string) bool {
		return qemuGenerated[key] && !ic.WithGenerated
	})
	if d != nil {
		d.Spec = withSSHKeysList(d.Spec)
	}
	return d, nil
}

// withSSHKeysList writes cloud-init's sshkeys, URL-encoded in PVE
// ("ssh-ed25519%20AAAA…%0A"), as pvectl's sshKeys list, a key an item,
// when the list stands for the same keys (so the document plans clean);
// anything else (a key ssh.ParseAuthorizedKey cannot read, a blank line
// kept between keys) stays sshkeys as PVE holds it.
func withSSHKeysList(fields []engine.Field) []engine.Field {
	for i, f := range fields {
		v, ok := f.Value.(string)
		if f.Key != "sshkeys" || !ok {
			continue
		}
		keys := strings.Split(compare.UnescapeKeys(v), "\n")
		if enc, err := spec.SSHKeysParam(keys); err == nil && compare.UnescapeKeys(enc) == compare.UnescapeKeys(v) {
			fields[i] = engine.Field{Key: "sshKeys", Value: keys}
		}
	}
	return fields
}
