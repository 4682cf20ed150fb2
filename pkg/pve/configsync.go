package pve

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// qemu-server offers a VM's config update in two forms (src/PVE/API2/Qemu.pm):
// POST …/config (update_vm_async) forks a qmconfig task, PUT …/config
// (update_vm) runs the same update ($update_vm_api with $sync) in the API
// call, under the same config lock (lock_config), and answers null. PUT
// takes the same parameters but import-working-storage and
// background_delay. PVE's own advice is to use POST "for any actions
// involving hotplug or storage allocation": those may take long, and a
// synchronous call holds a pveproxy/pvedaemon worker (and the client's
// connection) for as long. A change that only rewrites the config file
// costs one call as PUT, against a POST and its status polls.

// qemuDriveKey reports whether key is a drive (or an unused volume): a
// change of one may allocate, import, detach or destroy storage.
func qemuDriveKey(key string) bool {
	return qemuDiskRE.MatchString(key) || unusedRE.MatchString(key) || key == "efidisk0" || key == "tpmstate0"
}

// qemuConfigOnly reports whether PVE applies a change of key by writing the
// config file alone: on a stopped VM anything but a drive; on a running one
// (or one whose state is not known) the options it fast-plugs
// (description, name, tags, cloud-init settings…) and those it keeps
// pending until the next start, but nothing it hotplugs or sets on the
// running QEMU or its cgroup (QemuServer.pm vmconfig_hotplug_pending; see
// GuestLiveRule).
func qemuConfigOnly(key string, running bool) bool {
	if qemuDriveKey(key) {
		return false
	}
	if !running {
		return true
	}
	if slices.Contains(qemuFastPlug, key) || slices.Contains(qemuCloudInit, key) || ipconfigRE.MatchString(key) {
		return true
	}
	return qemuLiveRule(key, "").When == LivePending
}

// QemuConfigIsQuick reports whether a VM config update (the parameters of
// POST/PUT …/config) needs no background task: every key it sets, deletes
// or reverts is a config write only (qemuConfigOnly), and it does not
// force the destruction of volumes. running says whether the VM may be
// running (true when that is not known).
func QemuConfigIsQuick(params url.Values, running bool) bool {
	for key, vals := range params {
		switch key {
		case "digest", "skiplock":
			continue
		case "force", "import-working-storage", "background_delay":
			return false
		case "delete", "revert":
			for _, v := range vals {
				for _, k := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
					if !qemuConfigOnly(k, running) {
						return false
					}
				}
			}
			continue
		}
		if !qemuConfigOnly(key, running) {
			return false
		}
	}
	return true
}

// UpdateQemuSync changes a VM's config with the synchronous PUT
// …/config, for a change QemuConfigIsQuick: no task, so no polls. A
// lock timeout (PVE did nothing) is retried as StartTask retries it; any
// other failure is returned as it is, since a synchronous update that
// failed may have written part of the config (the digest guards a
// second attempt).
func (c *Client) UpdateQemuSync(ctx context.Context, node string, vmid int, params url.Values) error {
	return c.RunTask(ctx, http.MethodPut, guestPath(QEMU, node, vmid, "config"), params)
}
