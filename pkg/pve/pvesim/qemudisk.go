package pvesim

import (
	"fmt"
	"strconv"
	"strings"

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

// normalizeDisk allocates new volumes for "STOR:SIZE", "STOR:0,import-from=…"
// and "STOR:cloudinit" and writes the drive back as PVE stores it. The
// volumes it creates are appended to *created so a failed request can undo them.
func (s *Server) normalizeDisk(v *vm, key, val string, created *[]*volume) (string, error) {
	file, rest := diskFile(val)
	if file == "" {
		return "", paramErr1(key, "invalid format - missing volume")
	}
	if m := newDiskRe.FindStringSubmatch(file); m != nil {
		st, err := s.imageStorage(m[1], v.Node, key)
		if err != nil {
			return "", err
		}
		gbs, _ := strconv.ParseFloat(m[2], 64)
		size := int64(gbs * float64(gib))
		if src, ok := schema.PropValue(rest, "import-from"); ok {
			if gbs != 0 {
				return "", paramErr1(key, "'import-from' requires special syntax - use <storage ID>:0,import-from=<source>")
			}
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
		switch key {
		case "efidisk0":
			size = 128 << 10
			if t, _ := schema.PropValue(rest, "efitype"); t == "4m" {
				size = 4 * mib
			}
		case "tpmstate0":
			size = 4 * mib
		}
		if size <= 0 {
			return "", paramErr1(key, "invalid disk size '%s'", m[2])
		}
		vol := s.allocImage(st, v.VMID, size, "vm")
		*created = append(*created, vol)
		rest = schema.SetProp(rest, "size", schema.FormatSize(size))
		return printDrive(vol.volid(), rest), nil
	}
	if m := ciDiskRe.FindStringSubmatch(file); m != nil {
		st, err := s.imageStorage(m[1], v.Node, key)
		if err != nil {
			return "", err
		}
		name := fmt.Sprintf("vm-%d-cloudinit", v.VMID)
		format := "raw"
		if isFileStorage(st) {
			name, format = fmt.Sprintf("%d/vm-%d-cloudinit.qcow2", v.VMID, v.VMID), "qcow2"
		}
		vol := &volume{Storage: st.ID, Name: name, Content: "images", Format: format, Size: 4 * mib, VMID: v.VMID}
		if _, exists := s.st.Volumes[vol.volid()]; !exists {
			s.st.addVolume(vol)
			*created = append(*created, vol)
		}
		rest = schema.SetProp(rest, "media", "cdrom")
		return printDrive(vol.volid(), rest), nil
	}
	if m := volidRe.FindStringSubmatch(file); m != nil {
		if _, known := s.st.Storages[m[1]]; !known {
			return "", fail(500, "storage '%s' does not exist", m[1])
		}
		vol, ok := s.st.Volumes[file]
		if !ok {
			return "", fail(500, "volume '%s' does not exist", file)
		}
		if vol.Content == "iso" {
			rest = schema.SetProp(rest, "media", "cdrom")
		}
	}
	return printDrive(file, rest), nil
}
