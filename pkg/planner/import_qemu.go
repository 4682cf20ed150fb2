package planner

import (
	"github.com/pvectl/pvectl/pkg/spec"
)

// qemuGenerated are what PVE writes into a new VM's config by itself: a
// VM generation id, the SMBIOS UUID, its creation stamp. A copy with the
// same ones would clash with the original; --with-generated keeps them.
var qemuGenerated = map[string]bool{"vmgenid": true, "smbios1": true, "meta": true}

// importDoc writes a VM: its config's create parameters, the disks it
// owns as STORAGE:SIZE, pool and power state. A template is a QemuVM with
// template: true (pvectl's Template kind bakes one from a spec; one found
// in PVE is only its result).
func (k qemuKind) importDoc(ic *importCtx, _ *spec.Resource, lo *liveObj) (*ImportedDoc, error) {
	d := k.guestDoc(ic, spec.KindQemuVM, lo, func(key string) bool {
		return qemuGenerated[key] && !ic.withGenerated
	})
	return d, nil
}
