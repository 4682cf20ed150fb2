package pvesim

import (
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// allowedTags is GET /cluster/options' allowed-tags: pve-guest-common
// src/PVE/GuestHelpers.pm get_allowed_tags, sorted. A user with
// Sys.Modify on / is privileged. user-tag-access's user-allow (default
// free) decides: the user-allow-list unless none; the tags of the guests
// the user may audit (all, when privileged) when free or existing; the
// registered tags for the privileged, and never for the others.
func (s *Server) allowedTags(user string) []string {
	privileged := s.can(user, "/", "Sys.Modify")
	cfg := s.datacenter()
	userAllow, list := "free", ""
	if v := cfg["user-tag-access"]; v != "" {
		m, _ := schema.Default().Lookup("PUT", "/cluster/options")
		if p, ok := m.Param("user-tag-access"); ok {
			if items, err := schema.ParsePropertyString(v, p); err == nil {
				if a, ok := schema.PropValue(items, "user-allow"); ok {
					userAllow = a
				}
				list, _ = schema.PropValue(items, "user-allow-list")
			}
		}
	}
	allowed := map[string]bool{}
	if userAllow != "none" || privileged {
		for _, t := range strings.Split(list, ";") {
			if t != "" {
				allowed[t] = true
			}
		}
	}
	if userAllow == "free" || userAllow == "existing" || privileged {
		for _, vmid := range slices.Sorted(maps.Keys(s.st.VMs)) {
			if !privileged && s.checkVMPerm(user, vmid, "", false, "VM.Audit") != nil {
				continue
			}
			for _, t := range schema.SplitList(s.st.VMs[vmid].Conf["tags"]) {
				allowed[t] = true
			}
		}
	}
	for _, t := range strings.Split(cfg["registered-tags"], ";") {
		if t != "" {
			allowed[t] = privileged
		}
	}
	out := []string{}
	for _, t := range slices.Sorted(maps.Keys(allowed)) {
		if allowed[t] {
			out = append(out, t)
		}
	}
	return out
}
