package planner

import (
	"strconv"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/spec"
)

// The outputs each kind produces (outputs.go, spec.KindOutputs).

// guestOutputs: a guest's vmid and node, once it exists.
func guestOutputs(lo *engine.LiveObj, c *engine.Change) map[string]string {
	switch {
	case c != nil:
		st := stateOf(c)
		id := st.VMID
		if st.Created != 0 {
			id = st.Created
		}
		if id == 0 {
			return nil
		}
		return map[string]string{"vmid": strconv.Itoa(id), "node": c.Node}
	case lo != nil && lo.Exists:
		gl, ok := lo.State.(*guestLive)
		if !ok || gl.VMID == 0 {
			return nil
		}
		return map[string]string{"vmid": strconv.Itoa(gl.VMID), "node": lo.Node}
	}
	return nil
}

// Outputs: a guest's vmid and node, once it exists (spec.KindOutputs);
// QemuVM, Template and LxcContainer share it.
func (guest) Outputs(_ *spec.Resource, lo *engine.LiveObj, c *engine.Change) map[string]string {
	return guestOutputs(lo, c)
}

// Outputs: the downloaded file's volume id follows from its spec.
func (downloadKind) Outputs(r *spec.Resource, _ *engine.LiveObj, _ *engine.Change) map[string]string {
	return map[string]string{"volid": downloadVolid(r)}
}

// Outputs: the ISO's volume id follows from its spec (its name carries
// the content's hash).
func (configDriveKind) Outputs(r *spec.Resource, _ *engine.LiveObj, _ *engine.Change) map[string]string {
	return map[string]string{"volid": driveVolid(r)}
}

// Outputs: the full token id follows from its spec.
func (tokenKind) Outputs(r *spec.Resource, _ *engine.LiveObj, _ *engine.Change) map[string]string {
	return map[string]string{"tokenid": fullTokenID(r)}
}
