package spec

import (
	"fmt"
	"strings"
)

// Golden templates (design §4): a QemuVM's fromTemplate names a Template
// of the specs, which it clones once the template is baked.

func fromTemplateName(r *Resource) string {
	if g, ok := r.Keys.(*GuestKeys); ok && g != nil && g.FromTemplate != nil {
		return strings.TrimSpace(*g.FromTemplate)
	}
	return ""
}

// fromTemplateRef is the implicit reference of fromTemplate: an edge to
// the Template, so that the VM is cloned only once it is baked.
func fromTemplateRef(r *Resource) []refValue {
	if n := fromTemplateName(r); n != "" {
		return []refValue{{"fromTemplate", n}}
	}
	return nil
}

// resolveFromTemplate refuses a fromTemplate that names no Template of
// the specs (on the VM's connection), or one with state: absent.
func resolveFromTemplate(kind string) func(r *Resource, find func(kind, value string) []*Resource) []problem {
	return func(r *Resource, find func(kind, value string) []*Resource) []problem {
		name := fromTemplateName(r)
		if name == "" || r.State == Absent {
			return nil
		}
		ts := find(kind, name)
		if len(ts) == 0 {
			return []problem{{"fromTemplate", fmt.Sprintf("fromTemplate: no %s named %q in these specs (on this connection); to clone a PVE template the specs do not manage, use image", kind, name)}}
		}
		if ts[0].State != Present {
			return []problem{{"fromTemplate", fmt.Sprintf("fromTemplate: %s has state: absent", ts[0].Address())}}
		}
		return nil
	}
}

// checkTemplate: a Template is baked from a PVE template, which it must
// name.
func checkTemplate(r *Resource) []problem {
	if g, ok := r.Keys.(*GuestKeys); !ok || g == nil || g.BaseImage == nil {
		return []problem{{"baseImage", "spec.baseImage is required: the PVE template to bake it from (its VMID, or a part of its name that only one template has)"}}
	}
	return nil
}
