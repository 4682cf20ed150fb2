package pvesim

import (
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// A VM's cloud-init image is made from its config when it starts; while
// it runs, qemu-server remembers in the config's [special:cloudinit]
// section what the image was made from, GET …/cloudinit shows the
// difference and PUT …/cloudinit regenerates the image (qemu-server
// API2/Qemu.pm cloudinit_pending, cloudinit_update; QemuServer.pm
// vmconfig_hotplug_pending, vmconfig_update_cloudinit_drive).

// cloudinitTracked are the options whose change makes the cloud-init
// image stale (cloudinit_pending_properties): its options, name and NICs.
func cloudinitTracked(key string) bool { return isCloudinitOpt(key) || key == "name" || isNetKey(key) }

// recordCloudinit is $cloudinit_record_changed: when a running VM's
// cloud-init input changes, the special section keeps the value its image
// was made from (or marks the key "added"), and forgets it when the value
// comes back. newVal nil is a removal.
func recordCloudinit(v *vm, key string, conf map[string]string, newVal *string) {
	if !cloudinitTracked(key) {
		return
	}
	old, hadOld := conf[key]
	ci := v.CloudInit
	if ci == nil {
		ci = map[string]string{}
	}
	recorded, isRecorded := ci[key]
	added := setOf(schema.SplitList(ci["added"])...)
	delete(ci, "added")
	switch {
	case newVal != nil && isRecorded:
		if *newVal == recorded {
			delete(ci, key)
			delete(added, key)
		}
	case newVal != nil && added[key]:
	case newVal != nil && hadOld:
		ci[key] = old
	case newVal != nil:
		added[key] = true
	case !hadOld, isRecorded:
	case added[key]:
		delete(added, key)
	default:
		ci[key] = old
	}
	if len(added) > 0 {
		ci["added"] = strings.Join(slices.Sorted(maps.Keys(added)), ",")
	}
	v.CloudInit = ci
	if len(ci) == 0 {
		v.CloudInit = nil
	}
}

// cloudinitSection is the special section as the config file holds it:
// written only while the VM has a cloud-init drive (write_vm_config).
func cloudinitSection(v *vm) map[string]string {
	if !isCloudinitVM(v) {
		return nil
	}
	return v.CloudInit
}

// getCloudinit is cloudinit_pending: the keys added since the image was
// made, every set cloud-init option (with the value the image holds when
// it changed since) and the ones removed since.
func (s *Server) getCloudinit(k *guestKind, q *request) (any, error) {
	v, err := s.guestOf(k, q)
	if err != nil {
		return nil, err
	}
	ci := maps.Clone(cloudinitSection(v))
	conf := maps.Clone(v.Conf)
	if _, ok := conf["cipassword"]; ok {
		conf["cipassword"] = maskedSecret
	}
	if _, ok := ci["cipassword"]; ok {
		ci["cipassword"] = maskedSecret
	}
	out := []map[string]any{}
	added := ci["added"]
	delete(ci, "added")
	for _, key := range schema.SplitList(added) {
		row := map[string]any{"key": key}
		if val, ok := conf[key]; ok {
			row["pending"] = val
		}
		out = append(out, row)
	}
	for _, key := range slices.Sorted(maps.Keys(cloudinitOpts)) {
		// PVE matches the added list as a pattern, not by element.
		if conf[key] == "" || strings.Contains(added, key) {
			continue
		}
		row := map[string]any{"key": key, "value": conf[key]}
		if old := ci[key]; old != "" {
			row["value"], row["pending"] = old, conf[key]
		}
		out = append(out, row)
	}
	for _, key := range slices.Sorted(maps.Keys(ci)) {
		if conf[key] == "" {
			out = append(out, map[string]any{"key": key, "delete": 1})
		}
	}
	return out, nil
}

// checkSSHKeys is what create_vm and update_vm_api do with sshkeys before
// anything else: URL-decode it and have ssh-keygen read each non-blank
// line (pve-common Tools.pm validate_ssh_public_keys), failing the call
// with one message for any key it cannot read.
func checkSSHKeys(q *request) error {
	if !q.has("sshkeys") {
		return nil
	}
	raw, err := url.PathUnescape(q.get("sshkeys"))
	if err != nil {
		raw = q.get("sshkeys") // uri_unescape leaves a stray % as it is
	}
	for _, line := range strings.Split(raw, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line)); err != nil {
			return fail(http.StatusInternalServerError, "SSH public key validation error")
		}
	}
	return nil
}

// regenerateCloudinit is cloudinit_update: under the config lock, a VM
// with a cloud-init drive gets its image made anew from the config, which
// drops the special section; one without has nothing to do.
func (s *Server) regenerateCloudinit(k *guestKind, q *request) (any, error) {
	// lock_config in the API process: the call waits for a busy lock.
	v, err := s.lockedGuest(k, q)
	if err != nil {
		return nil, err
	}
	if isCloudinitVM(v) {
		v.CloudInit = nil
	}
	return nil, nil
}

// hashPassword stores cipassword as qemu-server does: a crypt(3)-style
// SHA-512 hash unless it is one already, or the plain text for Windows,
// whose cloud-init reads it so (update_vm_api). The simulator's hash has
// crypt's shape but not its rounds: nothing ever reads it back, GET config
// answers "**********".
func (s *Server) hashPassword(v *vm, pw string) string {
	if windowsVersion(effectiveConf(v)["ostype"]) > 0 || cryptRe.MatchString(pw) {
		return pw
	}
	salt := fmt.Sprintf("%016x", s.rng.Uint64())
	sum := sha512.Sum512([]byte(salt + pw))
	return "$6$" + salt + "$" + base64.RawStdEncoding.EncodeToString(sum[:])
}

var (
	cryptRe = lazyre.New(`^\$(?:[156]|2[ay])(\$.+){2}`)
	winOSRe = lazyre.New(`^win(\d+)$`)
)

// windowsVersion is qemu-server Helpers.pm windows_version.
func windowsVersion(ostype string) int {
	switch ostype {
	case "wxp", "w2k3", "w2k":
		return 5
	case "w2k8", "wvista":
		return 6
	}
	if m := winOSRe.FindStringSubmatch(ostype); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}
