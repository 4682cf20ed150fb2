package planner

import (
	"github.com/pvectl/pvectl/pkg/spec"
)

// lxcDerived are what PVE takes from the template when it makes a
// container (pve-container LXC/Create.pm: the OS type and architecture
// come from the unpacked root filesystem): not the user's.
var lxcDerived = map[string]bool{"ostype": true, "arch": true}

// importDoc writes a container like a VM. PVE does not record the
// template a container was made from: the document says so, and a create
// from it needs ostemplate added.
func (k lxcKind) importDoc(ic *importCtx, _ *spec.Resource, lo *liveObj) (*ImportedDoc, error) {
	d := k.guestDoc(ic, spec.KindLxcContainer, lo, func(key string) bool {
		return lxcDerived[key] && !ic.withGenerated
	})
	if d != nil {
		d.Notes = append(d.Notes, "# PVE does not record the template this container was made from:",
			"# add spec.ostemplate (e.g. local:vztmpl/…) before this document creates it anew.")
	}
	return d, nil
}
