package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/provision"
)

// checkProvision checks a resource's provisioning keys offline (design §4):
// each file has a known extension and a name the description block can
// hold, and exists, relative to the spec file that names it (stdin: the
// working directory); provisionTimeout is a positive duration, sshPort a
// port. It records the files' absolute paths in ProvisionPaths.
func checkProvision(r *Resource) []problem {
	p := Provisioning(r)
	if p == nil {
		return nil
	}
	var out []problem
	bad := func(key, format string, args ...any) { out = append(out, problem{key, fmt.Sprintf(format, args...)}) }
	if p.SSHPort != nil && (*p.SSHPort < 1 || *p.SSHPort > 65535) {
		bad("sshPort", "spec.sshPort must be a TCP port (1-65535), got %d", *p.SSHPort)
	}
	if p.ProvisionTimeout != nil {
		if d, err := time.ParseDuration(strings.TrimSpace(*p.ProvisionTimeout)); err != nil || d <= 0 {
			bad("provisionTimeout", "spec.provisionTimeout must be a positive duration like 90s, 10m or 1h, got %q", *p.ProvisionTimeout)
		}
	}
	if g, ok := r.Keys.(*GuestKeys); ok && len(p.Provision) > 0 && g.Running != nil && !*g.Running {
		bad("running", "spec.running is false but spec.provision needs the VM running: drop running: false, or provision")
	}
	base := "."
	if f := r.KeyPos.File("provision"); f != "" && f != stdinName {
		base = filepath.Dir(f)
	}
	p.ProvisionPaths = nil
	seen := map[string]bool{}
	for i, name := range p.Provision {
		// The item's line when it was written as a list.
		key := fmt.Sprintf("provision[%d]", i)
		if !r.KeyPos.Has(key) {
			key = "provision"
		}
		if err := provision.CheckName(name); err != nil {
			bad(key, "spec.provision: %v", err)
			continue
		}
		if seen[name] {
			bad(key, "spec.provision lists %s twice", name)
			continue
		}
		seen[name] = true
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(base, path)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			bad(key, "spec.provision: %s: %v", name, err)
			continue
		}
		fi, err := os.Stat(abs)
		switch {
		case err != nil && os.IsNotExist(err):
			bad(key, "spec.provision: file %s not found (looked for %s, relative to the spec file)", name, abs)
			continue
		case err != nil:
			bad(key, "spec.provision: %s: %v", name, err)
			continue
		case !fi.Mode().IsRegular():
			bad(key, "spec.provision: %s is not a regular file", name)
			continue
		}
		p.ProvisionPaths = append(p.ProvisionPaths, abs)
	}
	return out
}

// checkNotTemplateProvision refuses provision on a VM made a template
// (template: true): it never runs. A Template document, which boots its
// VM to provision it before the conversion, does not take this check.
func checkNotTemplateProvision(r *Resource) []problem {
	if p := Provisioning(r); p != nil && len(p.Provision) > 0 && r.Params.Get("template") == "1" {
		return []problem{{"provision", "spec.provision: a template never runs, so it cannot be provisioned: drop template: true (a Template document bakes a provisioned golden image)"}}
	}
	return nil
}
