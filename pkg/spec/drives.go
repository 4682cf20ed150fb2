package spec

import (
	"fmt"
	"slices"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

var (
	// qemuDriveKey is qemu-server's is_valid_drivename.
	qemuDriveKey = lazyre.New(`^((ide|sata|scsi|virtio)\d+|efidisk0|tpmstate0)$`)
	// isoVolume is a volume ID of an ISO image: pve-storage Plugin.pm
	// parse_volname reads STORAGE:iso/NAME.iso (or .img) as one.
	isoVolume = lazyre.New(`(?i)^[a-z][a-z0-9\-_.]*[a-z0-9]:iso/[^/]+\.(iso|img)$`)
)

// checkISODrives refuses an ISO image in a drive without media=cdrom, as
// PVE does (qemu-server API2/Qemu.pm check_drive_param: "explicit
// 'media=cdrom' is required for iso images"), and says what to write.
func checkISODrives(r *Resource) []problem {
	var out []problem
	var keys []string // the drives only, then sorted
	for key := range r.Params.All() {
		if qemuDriveKey.MatchString(key) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	for _, key := range keys {
		items, err := schema.SplitPropertyString(r.Params.Get(key))
		if err != nil {
			continue // the schema check reported it
		}
		var file, media string
		for i, it := range items {
			switch {
			case it.Key == "file" || it.Key == "" && i == 0:
				file = it.Value
			case it.Key == "media":
				media = it.Value
			}
		}
		if !isoVolume.MatchString(file) || media == "cdrom" {
			continue
		}
		fix := schema.FormatPropertyString(schema.SetProp(items, "media", "cdrom"), nil)
		out = append(out, problem{key, fmt.Sprintf(
			"spec.%s: %s is an ISO image, which PVE attaches only as a CD-ROM: write %s: %q", key, file, key, fix)})
	}
	return out
}
