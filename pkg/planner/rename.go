package planner

import (
	"fmt"

	"github.com/pvectl/pvectl/pkg/spec"
)

// Renames without a state file. A document's renamedFrom names what the
// guest is called in PVE now: a guest found by neither its vmid nor its
// new name is looked for by the old one, and when found it is this
// document's object — the comparison then sees the name differ and
// updates it in place (a VM's name and a container's hostname are config
// keys), so the guest keeps its vmid, disks and addresses. Once renamed,
// the guest is found by its new name and renamedFrom does nothing.

// renamedFrom is r as it was written before the rename: its identity the
// old name.
func (g guest) renamedFrom(r *spec.Resource) *spec.Resource {
	old := *r
	old.Params = r.Params.Clone()
	old.Params.Set(g.nameParam, r.RenamedFrom())
	return &old
}

func renameReason(g guest, gl *guestLive) string {
	return fmt.Sprintf("renamed from %s (renamedFrom): %s %d keeps its vmid, disks and addresses", gl.RenamedFrom, g.noun, gl.VMID)
}
