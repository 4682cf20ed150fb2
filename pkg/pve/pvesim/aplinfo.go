package pvesim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The appliance index (pve-manager PVE/API2/Nodes.pm aplinfo,
// apl_download; PVE/APLInfo.pm). A real node reads the index that
// pveam update fetched from download.proxmox.com; the simulator has a
// small fixed one and never fetches anything: a download is a task that
// writes the template into the storage's content.

// aplSource is where PVE's index points system templates
// (APLInfo.pm get_apl_sources; the location is "$source/$section/…").
const aplSource = "http://download.proxmox.com/images"

// appliance is one record of the index, with the fields APLInfo.pm
// read_aplinfo_from_fh makes of it.
type appliance struct {
	pkg, version, os, headline, description, arch string
}

// template is the file name the record downloads as.
func (a appliance) template() string {
	return fmt.Sprintf("%s-%s_%s_%s.tar.zst", a.os, a.pkg, a.version, a.arch)
}

func (a appliance) record() map[string]any {
	tmpl := a.template()
	return map[string]any{
		"package": a.pkg, "version": a.version, "os": a.os, "type": "lxc", "section": "system",
		"headline": a.headline, "description": a.description, "architecture": a.arch,
		"infopage":   "https://pve.proxmox.com/wiki/Linux_Container#pct_supported_distributions",
		"maintainer": "Proxmox Support Team <support@proxmox.com>",
		"source":     aplSource, "location": aplSource + "/system/" + tmpl, "template": tmpl,
		// A made-up digest: nothing is downloaded, so nothing checks it.
		"sha512sum": fmt.Sprintf("%0128x", len(tmpl)),
	}
}

// appliances is the simulated index by template name.
func appliances() map[string]appliance {
	list := []appliance{
		{"standard", "12.7-1", "debian-12", "Debian 12 Bookworm (standard)", "A small Debian Bookworm system including all standard packages.", "amd64"},
		{"standard", "13.1-2", "debian-13", "Debian 13 Trixie (standard)", "A small Debian Trixie system including all standard packages.", "amd64"},
		{"standard", "24.04-2", "ubuntu-24.04", "Ubuntu 24.04 Noble (standard)", "A small Ubuntu 24.04 Noble Numbat system including all standard packages.", "amd64"},
		{"default", "20250617", "alpine-3.22", "Alpine Linux 3.22 (default)", "A small Alpine Linux 3.22 system.", "amd64"},
	}
	out := map[string]appliance{}
	for _, a := range list {
		out[a.template()] = a
	}
	return out
}

func (s *Server) aplinfoRoutes() []route {
	return []route{
		r("GET /nodes/{node}/aplinfo", s.listAppliances),
		r("POST /nodes/{node}/aplinfo", s.downloadAppliance),
	}
}

// listAppliances is aplinfo: every record of the index (pve-web-news left
// out), to any user.
func (s *Server) listAppliances(q *request) (any, error) {
	apls := appliances()
	out := []map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(apls)) {
		out = append(out, apls[name].record())
	}
	return out, nil
}

// downloadAppliance is apl_download: an unknown template is a 400
// (`no such template`), the storage must be enabled on the node
// (storage_check_enabled) and hold templates; the `download` task puts
// the file into the storage's vztmpl directory, replacing one of the
// same name as download_file_from_url does with a checksum.
func (s *Server) downloadAppliance(q *request) (any, error) {
	name := q.get("template")
	apl, ok := appliances()[name]
	if !ok {
		return nil, paramErr1("template", "no such template")
	}
	st, err := s.storageByID(q.get("storage"))
	if err != nil {
		return nil, err
	}
	node := q.vars["node"]
	if st.Disable {
		return nil, fail(http.StatusInternalServerError, "storage '%s' is disabled", st.ID)
	}
	if !st.onNode(node) {
		return nil, fail(http.StatusInternalServerError, "storage '%s' is not available on node '%s'", st.ID, node)
	}
	if !st.allows("vztmpl") {
		return nil, fail(http.StatusInternalServerError, "storage '%s' does not support templates", st.ID)
	}
	rec := apl.record()
	volName := "vztmpl/" + name
	dst := s.volumePath(st, &volume{Content: "vztmpl", Name: volName})
	return s.startTask(node, "download", workerID(name), nil, func(t *task) error {
		url := rec["location"].(string)
		t.logf("downloading %s to %s", url, dst)
		body := simulatedFile(url)
		if p := s.dataPath(st.ID, "vztmpl", name); p != "" {
			if err := writePlaceholder(p, body); err != nil {
				return err
			}
		}
		t.logf("calculating checksum...OK, checksum verified")
		t.logf("download of '%s' to '%s' finished", url, dst)
		s.st.addVolume(&volume{Storage: st.ID, Name: volName, Content: "vztmpl", Format: formatOf("vztmpl", name),
			Size: simulatedSize(name), Ctime: time.Now().Unix(), Sums: checksums(strings.NewReader(body))})
		return nil
	}), nil
}
