package schema

import (
	"net/url"
	"strings"
)

// JoinLists joins the repeated values of a string parameter whose format is
// a list ("pve-configid-list": delete=net2&delete=net3 becomes
// delete=net2,net3), as pve-common RESTHandler.pm
// normalize_legacy_param_formats does before it validates a call. Other
// repeated parameters are left for Check to refuse.
func (m *Method) JoinLists(params url.Values) {
	for name, vals := range params {
		if len(vals) < 2 {
			continue
		}
		if p, ok := m.Param(name); ok && p.Type == "string" && strings.HasSuffix(p.Format, "-list") {
			params[name] = []string{strings.Join(vals, ",")}
		}
	}
}
