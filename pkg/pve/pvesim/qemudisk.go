package pvesim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// defaultBootDevices mirrors PVE's choice when boot is not given: first
// disk, first CD-ROM (not cloud-init), first NIC.
func defaultBootDevices(conf map[string]string) []string {
	var disk, cd, net string
	for _, bus := range []string{"ide", "sata", "scsi", "virtio"} {
		for i := 0; i <= 30; i++ {
			k := bus + strconv.Itoa(i)
			val, ok := conf[k]
			if !ok {
				continue
			}
			file, rest := diskFile(val)
			media, _ := schema.PropValue(rest, "media")
			switch {
			case media == "cdrom" && !strings.Contains(file, "cloudinit") && cd == "":
				cd = k
			case media != "cdrom" && disk == "":
				disk = k
			}
		}
	}
	for i := 0; i < 32; i++ {
		if _, ok := conf["net"+strconv.Itoa(i)]; ok {
			net = "net" + strconv.Itoa(i)
			break
		}
	}
	var out []string
	for _, d := range []string{disk, cd, net} {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// isoNameRe is the volume name of an ISO image (pve-storage Plugin.pm
// parse_volname: iso/NAME.iso or .img).
var isoNameRe = lazyre.New(`(?i)^iso/[^/]+\.(iso|img)$`)

// normalizeDisk checks a drive value as qemu-server does before it forks
// (check_drive_param, check_storage_access) and, when created is not nil,
// makes its volume as create_disks does: "STOR:SIZE", "STOR:0,import-from=…"
// and "STOR:cloudinit" get a new volume and the drive is written back as PVE
// stores it. With created nil the value is only checked and comes back
// printed, its volume still to be made (a config update makes it under the
// lock, in the worker). The volumes made are appended to *created so a
// failed request can undo them.
func (s *Server) normalizeDisk(v *vm, key, val string, created *[]*volume) (string, error) {
	file, rest := diskFile(val)
	if p, ok := s.qemu.config.Param(key); ok {
		rest = parseBools(p, rest) // print_drive writes parse_drive's values
	}
	if file == "" {
		return "", paramErr1(key, "invalid format - missing volume")
	}
	if m := volidRe.FindStringSubmatch(file); m != nil && !newDiskRe.MatchString(file) && !ciDiskRe.MatchString(file) {
		if _, known := s.st.Storages[m[1]]; !known {
			return "", fail(http.StatusInternalServerError, "storage '%s' does not exist", m[1])
		}
		// qemu-server API2/Qemu.pm check_drive_param.
		if media, _ := schema.PropValue(rest, "media"); isoNameRe.MatchString(m[2]) && media != "cdrom" {
			return "", paramErr1(key, "explicit 'media=cdrom' is required for iso images")
		}
	}
	if m := newDiskRe.FindStringSubmatch(file); m != nil {
		return s.newDiskDrive(v, key, file, rest, m, created)
	}
	if m := ciDiskRe.FindStringSubmatch(file); m != nil {
		return s.cloudinitDrive(v, key, file, rest, m[1], created)
	}
	if volidRe.MatchString(file) {
		vol, ok := s.st.Volumes[file]
		if !ok {
			return "", fail(500, "volume '%s' does not exist", file)
		}
		// check_storage_access: a drive holds an image or an ISO.
		if vol.Content != "images" && vol.Content != "rootdir" && vol.Content != "iso" {
			return "", paramErr1(key, "content type needs to be 'images' or 'iso'")
		}
		// create_disks writes an existing volume's size as the storage
		// reports it (volume_size_info), whatever the request said.
		rest = schema.SetProp(rest, "size", schema.FormatSize(vol.Size))
	}
	return printDrive(file, rest), nil
}

// newDiskDrive is normalizeDisk for a new disk, "STOR:SIZE" or
// "STOR:0,import-from=…" (m is newDiskRe's match of file).
func (s *Server) newDiskDrive(v *vm, key, file string, rest []schema.KV, m []string, created *[]*volume) (string, error) {
	gbs, _ := strconv.ParseFloat(m[2], 64)
	src, importing := schema.PropValue(rest, "import-from")
	if importing && gbs != 0 {
		return "", paramErr1(key, "'import-from' requires special syntax - use <storage ID>:0,import-from=<source>")
	}
	if created == nil {
		if err := s.checkImageStorage(m[1]); err != nil {
			return "", err
		}
		return printDrive(file, rest), nil
	}
	st, err := s.imageStorage(m[1], v.Node, "storage")
	if err != nil {
		return "", err
	}
	size := int64(gbs * float64(gib))
	if importing {
		sv, ok := s.st.Volumes[src]
		if !ok && !strings.HasPrefix(src, "/") {
			return "", fail(500, "volume '%s' does not exist", src)
		}
		size = 2 * gib
		if ok {
			size = sv.Size
		}
		rest = schema.DeleteProp(rest, "import-from")
	}
	size = fixedDiskSize(key, rest, size)
	if size <= 0 {
		return "", paramErr1(key, "invalid disk size '%s'", m[2])
	}
	// create_disks allocates in the format asked for (else the
	// storage's default), makes it a base volume when the guest is a
	// template (vdisk_create_base), and drops "format" once the disk
	// exists (qemu-server API2/Qemu.pm create_disks).
	format, _ := schema.PropValue(rest, "format")
	vol := s.allocImageFormat(st, v.VMID, size, "vm", format)
	if v.Conf["template"] == "1" {
		s.toBase(vol)
	}
	*created = append(*created, vol)
	rest = schema.SetProp(schema.DeleteProp(rest, "format"), "size", schema.FormatSize(size))
	return printDrive(vol.volid(), rest), nil
}

// fixedDiskSize is the size of an EFI or TPM state disk, whatever was
// asked for; size for any other drive.
func fixedDiskSize(key string, rest []schema.KV, size int64) int64 {
	switch key {
	case "efidisk0":
		if t, _ := schema.PropValue(rest, "efitype"); t == "4m" {
			return 4 * mib
		}
		return 128 << 10
	case "tpmstate0":
		return 4 * mib
	}
	return size
}

// cloudinitDrive is normalizeDisk for "STOR:cloudinit" on storage stor.
func (s *Server) cloudinitDrive(v *vm, key, file string, rest []schema.KV, stor string, created *[]*volume) (string, error) {
	// check_storage_access skips cloud-init volumes: the storage need not
	// hold images (a cloud-init drive on "local" is fine).
	st, ok := s.st.Storages[stor]
	if !ok {
		return "", fail(http.StatusInternalServerError, "storage '%s' does not exist", stor)
	}
	if created == nil {
		return printDrive(file, rest), nil
	}
	// create_disks refuses a second cloud-init drive.
	for _, conf := range []map[string]string{v.Conf, v.Pending} {
		for _, other := range slices.Sorted(maps.Keys(conf)) {
			if other != key && qemuDriveRe.MatchString(other) && isCloudinitDrive(conf[other]) {
				return "", fmt.Errorf("%s - cloud-init drive is already attached at '%s'", key, other)
			}
		}
	}
	if !st.onNode(v.Node) {
		return "", fail(http.StatusInternalServerError, "storage '%s' is not available on node '%s'", stor, v.Node)
	}
	format, _ := schema.PropValue(rest, "format")
	name, format := cloudinitName(st, v.VMID, format)
	rest = schema.DeleteProp(rest, "format") // create_disks: no longer needed
	vol := &volume{Storage: st.ID, Name: name, Content: "images", Format: format, Size: 4 * mib, VMID: v.VMID}
	if _, exists := s.st.Volumes[vol.volid()]; !exists {
		s.st.addVolume(vol)
		*created = append(*created, vol)
	}
	rest = schema.SetProp(rest, "media", "cdrom")
	return printDrive(vol.volid(), rest), nil
}

// cloudinitName is the volume name and format of a new cloud-init drive:
// on a storage with a path the format (asked for, else qcow2) is the
// name's extension, elsewhere it is raw (qemu-server API2/Qemu.pm
// create_disks, QemuServer.pm clone_disk).
func cloudinitName(st *storage, vmid int, format string) (string, string) {
	if !isFileStorage(st) {
		return fmt.Sprintf("vm-%d-cloudinit", vmid), "raw"
	}
	if format != "raw" && format != "vmdk" {
		format = "qcow2"
	}
	return fmt.Sprintf("%d/vm-%d-cloudinit.%s", vmid, vmid, format), format
}
