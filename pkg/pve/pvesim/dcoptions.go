package pvesim

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Datacenter options: /etc/pve/datacenter.cfg, as pve-manager
// PVE/API2/Cluster.pm get_options/set_options serve it and pve-cluster
// src/PVE/DataCenterConfig.pm parses and writes it. set_options writes
// every given key and then removes those in `delete`; the writer checks
// next-id's bounds. The reader answers property strings parsed (objects),
// tag lists as arrays, the description (kept as the file's leading `#`
// comment lines) with a newline after each line and always present, and
// mac_prefix as PVE's OUI when unset. Without Sys.Audit on / only console
// and tag-style are answered. The writer's mappings (dcWriterMappings)
// and the lists it sorts are applied on every write; allowed-tags is
// dctags.go.

const proxmoxOUI = "BC:24:11"

// dcParsed are the keys the reader parses as property strings.
var dcParsed = []string{"crs", "migration", "replication", "next-id", "ha", "notify", "u2f", "webauthn", "tag-style", "user-tag-access"}

func (s *Server) dcOptionRoutes() []route {
	return []route{
		r("GET /cluster/options", s.getDCOptions),
		r("PUT /cluster/options", s.setDCOptions),
	}
}

func (s *Server) datacenter() map[string]string {
	return ensureMap(&s.st.Datacenter)
}

func (s *Server) getDCOptions(q *request) (any, error) {
	cfg := s.datacenter()
	out := map[string]any{}
	if s.can(q.user, "/", "Sys.Audit") {
		m, _ := schema.Default().Lookup("PUT", "/cluster/options")
		for k, v := range cfg {
			out[k] = dcValue(m, k, v)
		}
		out["description"] = dcDescription(cfg["description"])
		if v, ok := cfg["migration_unsecure"]; ok {
			dcMigrationUnsecure(out, v)
		}
		if _, set := cfg["mac_prefix"]; !set {
			out["mac_prefix"] = proxmoxOUI
		}
	} else {
		m, _ := schema.Default().Lookup("PUT", "/cluster/options")
		for _, k := range []string{"console", "tag-style"} {
			if v, ok := cfg[k]; ok {
				out[k] = dcValue(m, k, v)
			}
		}
	}
	out["allowed-tags"] = s.allowedTags(q.user)
	return out, nil
}

// dcDescription is the description as the reader gets it back from the
// comment lines: each line with its newline. write_datacenter_config
// writes "#" and the line for each element of Perl's split(/\n/), which
// drops only the trailing empty ones: an empty line inside (or at the
// start of) the text is written as "#" and read back as an empty line
// (pve-cluster src/PVE/DataCenterConfig.pm write_datacenter_config,
// parse_datacenter_config).
func dcDescription(d string) string {
	lines := strings.Split(d, "\n")
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var b strings.Builder
	for _, line := range lines {
		b.WriteString(line + "\n")
	}
	return b.String()
}

// dcValue is one stored value as the reader answers it.
func dcValue(m *schema.Method, k, v string) any {
	switch {
	case k == "registered-tags":
		return strings.Split(v, ";")
	case slices.Contains(dcParsed, k) && m != nil:
		p, _ := m.Param(k)
		items, err := schema.ParsePropertyString(v, p)
		if err != nil {
			return v
		}
		obj := map[string]any{}
		for _, it := range items {
			obj[it.Key] = it.Value
			if it.Key == "user-allow-list" {
				obj[it.Key] = strings.Split(it.Value, ";")
			}
			if sp, ok := p.SubKeys()[it.Key]; ok && (sp.Type == "integer" || sp.Type == "boolean") {
				if n, err := strconv.ParseInt(it.Value, 10, 64); err == nil {
					obj[it.Key] = n
				}
			}
		}
		return obj
	}
	return v
}

// setDCOptions is set_options: the keys given are written, then the
// deleted ones removed, then the file written (write_datacenter_config).
func (s *Server) setDCOptions(q *request) (any, error) {
	next := map[string]string{}
	for k, v := range s.datacenter() {
		// set_options reads the file first: the reader splits these
		// lists, and the writer joins them sorted again.
		switch k {
		case "registered-tags":
			v = sortedTagList(v)
		case "user-tag-access":
			v = userAllowList.ReplaceAllStringFunc(v, func(kv string) string {
				return "user-allow-list=" + sortedTagList(strings.TrimPrefix(kv, "user-allow-list="))
			})
		}
		next[k] = v
	}
	for k := range q.params {
		if k != "delete" {
			next[k] = q.get(k)
		}
	}
	for _, k := range schema.SplitList(q.get("delete")) {
		delete(next, k)
	}
	dcWriterMappings(next)
	if err := checkNextID(next["next-id"]); err != nil {
		return nil, err
	}
	if strings.EqualFold(next["mac_prefix"], proxmoxOUI) {
		delete(next, "mac_prefix") // the writer leaves the default out
	}
	s.st.Datacenter = next
	return nil, s.saveLocked()
}

// checkNextID is the writer's "lower <= upper" rule (defaults 100 and
// 1000000).
func checkNextID(v string) error {
	if v == "" {
		return nil
	}
	m, _ := schema.Default().Lookup("PUT", "/cluster/options")
	p, _ := m.Param("next-id")
	items, err := schema.ParsePropertyString(v, p)
	if err != nil {
		return fail(http.StatusInternalServerError, "%v", err)
	}
	bound := func(key string, def int) int {
		if s, ok := schema.PropValue(items, key); ok {
			if n, err := strconv.Atoi(s); err == nil {
				return n
			}
		}
		return def
	}
	lower, upper := bound("lower", 100), bound("upper", 1000000)
	if lower > upper {
		return fail(http.StatusInternalServerError, "%s", fmt.Sprintf("lower (%d) <= upper (%d) boundary rule broken", lower, upper))
	}
	return nil
}

var userAllowList = lazyre.New(`user-allow-list=[^,]*`)

func sortedTagList(v string) string {
	return strings.Join(slices.Sorted(slices.Values(strings.Split(v, ";"))), ";")
}

// dcWriterMappings is what write_datacenter_config (pve-cluster
// src/PVE/DataCenterConfig.pm) changes before it writes: the deprecated
// migration_unsecure becomes migration's type when there is no migration
// setting (and is kept, and written, when there is one); console applet is
// written as html5; an empty crs is not written.
func dcWriterMappings(cfg map[string]string) {
	if v, ok := cfg["migration_unsecure"]; ok {
		if _, set := cfg["migration"]; !set {
			delete(cfg, "migration_unsecure")
			cfg["migration"] = "type=" + map[bool]string{true: "insecure", false: "secure"}[perlTrue(v)]
		}
	}
	if cfg["console"] == "applet" {
		cfg["console"] = "html5"
	}
	if v, ok := cfg["crs"]; ok && v == "" {
		delete(cfg, "crs")
	}
}

// dcMigrationUnsecure is what parse_datacenter_config makes of a
// migration_unsecure kept beside migration: a boolean (parse_config's
// parse_boolean); migration's type, which its format requires, wins.
func dcMigrationUnsecure(out map[string]any, v string) {
	out["migration_unsecure"] = 0
	if perlTrue(v) {
		out["migration_unsecure"] = 1
	}
}
