package planner

import (
	"fmt"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/spec"
)

// lxcDerived are what PVE takes from the template when it makes a
// container (pve-container LXC/Create.pm: the OS type and architecture
// come from the unpacked root filesystem): not the user's.
var lxcDerived = map[string]bool{"ostype": true, "arch": true}

// ImportDoc writes a container like a VM. PVE does not record the
// template a container was made from, which a spec must name (the create
// call requires it): the document reads it from a variable, and says so.
func (k lxcKind) ImportDoc(ic *engine.ImportCtx, _ *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	d := k.guestDoc(ic, spec.KindLxcContainer, lo, func(key string) bool {
		return lxcDerived[key] && !ic.WithGenerated
	})
	if d != nil {
		d.Spec = append(d.Spec, engine.Field{Key: "ostemplate", Value: d.Unrecorded(fmt.Sprintf("%s_%d", k.noun, liveOf(lo).VMID), "ostemplate",
			"PVE does not record the template this container was made from; only a create uses it: set the variable or write the template (e.g. local:vztmpl/…) here")})
	}
	return d, nil
}
