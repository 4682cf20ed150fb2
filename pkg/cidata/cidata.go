package cidata

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pvectl/pvectl/internal/iso9660"
)

// Format is the layout of a config drive.
type Format string

const (
	// NoCloud is cloud-init's NoCloud seed: volume label "cidata" and the
	// files user-data, meta-data, network-config and vendor-data at the
	// root (cloud-init cloudinit/sources/DataSourceNoCloud.py).
	NoCloud Format = "nocloud"
	// ConfigDrive2 is the OpenStack config drive v2 that PVE writes for
	// citype=configdrive2: label "config-2", files under openstack/
	// (qemu-server src/PVE/QemuServer/Cloudinit.pm, generate_configdrive2;
	// cloud-init cloudinit/sources/helpers/openstack.py, read_v2).
	ConfigDrive2 Format = "configdrive2"
)

// ParseFormat accepts the spec's spelling of a format; "" is NoCloud.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case "", NoCloud:
		return NoCloud, nil
	case ConfigDrive2:
		return ConfigDrive2, nil
	}
	return "", fmt.Errorf("format %q: want %q or %q", s, NoCloud, ConfigDrive2)
}

// Label is the volume label cloud-init looks for (it also accepts the
// upper-case form; the image carries the label as written here, as
// genisoimage -V does for PVE).
func (f Format) Label() string {
	if f == ConfigDrive2 {
		return "config-2"
	}
	return "cidata"
}

// Seed is what a config drive carries. Data fields are written byte for
// byte; a nil or empty optional field leaves its file out.
type Seed struct {
	Format   Format // "" means NoCloud
	Hostname string // meta-data local-hostname / meta_data.json hostname; optional
	// UserData is always written (cloud-init requires the NoCloud file even
	// when empty).
	UserData []byte
	// NetworkConfig: NoCloud network-config (network config v1 or v2
	// YAML). For ConfigDrive2 it is a Debian interfaces(5) file, written to
	// openstack/content/0000 and named by meta_data.json network_config, as
	// PVE does; cloud-init converts it (DataSourceConfigDrive network_eni).
	NetworkConfig []byte
	// NetworkData is ConfigDrive2 only: OpenStack network_data.json, a JSON
	// object, written to openstack/latest/network_data.json. cloud-init
	// prefers it over NetworkConfig when both are given.
	NetworkData []byte
	// VendorData: NoCloud vendor-data as given. ConfigDrive2 stores it as a
	// JSON string in openstack/latest/vendor_data.json, the one form
	// cloud-init hands on unchanged as vendor data (sources.convert_vendordata);
	// raw cloud-config there would not parse as JSON.
	VendorData []byte
}

func (s Seed) format() Format {
	if s.Format == "" {
		return NoCloud
	}
	return s.Format
}

// Validate reports what Build would refuse, without building.
func (s Seed) Validate() error {
	f, err := ParseFormat(string(s.Format))
	if err != nil {
		return err
	}
	if s.Hostname != "" {
		if err := validHostname(s.Hostname); err != nil {
			return err
		}
	}
	if len(s.NetworkData) > 0 {
		if f != ConfigDrive2 {
			return fmt.Errorf("network data (network_data.json) is only for format %q; NoCloud takes network-config", ConfigDrive2)
		}
		var obj map[string]any
		if err := json.Unmarshal(s.NetworkData, &obj); err != nil || obj == nil {
			return fmt.Errorf("network data is not a JSON object (OpenStack network_data.json)")
		}
	}
	return nil
}

// validHostname: RFC 1123 labels, dot-separated. Checked so that a name
// cannot break the meta-data it is written into.
func validHostname(h string) error {
	if len(h) > 253 {
		return fmt.Errorf("hostname %q is longer than 253 characters", h)
	}
	for _, label := range strings.Split(h, ".") {
		ok := label != "" && len(label) <= 63 && label[0] != '-' && label[len(label)-1] != '-'
		for i := 0; ok && i < len(label); i++ {
			c := label[i]
			ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
		}
		if !ok {
			return fmt.Errorf("hostname %q: want dot-separated labels of letters, digits and inner hyphens", h)
		}
	}
	return nil
}

// InstanceID is derived from every other field, so cloud-init sees a new
// instance exactly when the seed changes (PVE likewise hashes user and
// network data: Cloudinit.pm nocloud_gen_metadata). It is UUID-shaped
// (RFC 9562 version 8 over SHA-256) because the config-drive field that
// carries it is OpenStack's "uuid"; NoCloud takes any string.
func (s Seed) InstanceID() string {
	h := sha256.New()
	field := func(name string, b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write([]byte(name))
		h.Write(n[:])
		h.Write(b)
	}
	field("format", []byte(s.format()))
	field("hostname", []byte(s.Hostname))
	field("user-data", s.UserData)
	field("network-config", s.NetworkConfig)
	field("network-data", s.NetworkData)
	field("vendor-data", s.VendorData)
	u := h.Sum(nil)[:16]
	u[6] = u[6]&0x0f | 0x80 // version 8
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	x := hex.EncodeToString(u)
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// Build returns the ISO image of s.
func Build(s Seed) ([]byte, error) {
	files, err := s.files()
	if err != nil {
		return nil, err
	}
	img, err := iso9660.Bytes(iso9660.Volume{Label: s.format().Label(), Files: files})
	if err != nil {
		return nil, fmt.Errorf("build %s config drive: %w", s.format(), err)
	}
	return img, nil
}

func (s Seed) files() ([]iso9660.File, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.format() == ConfigDrive2 {
		return s.configDrive2()
	}
	return s.noCloud(), nil
}

func (s Seed) noCloud() []iso9660.File {
	// Quoted as a JSON string (which is YAML): a hostname such as "yes"
	// or "1234" would otherwise load as a boolean or a number.
	md := "instance-id: " + s.InstanceID() + "\n"
	if s.Hostname != "" {
		q, _ := json.Marshal(s.Hostname)
		md += "local-hostname: " + string(q) + "\n"
	}
	files := []iso9660.File{
		{Path: "user-data", Data: nonNil(s.UserData)},
		{Path: "meta-data", Data: []byte(md)},
	}
	if len(s.NetworkConfig) > 0 {
		files = append(files, iso9660.File{Path: "network-config", Data: s.NetworkConfig})
	}
	if len(s.VendorData) > 0 {
		files = append(files, iso9660.File{Path: "vendor-data", Data: s.VendorData})
	}
	return files
}

// contentPath is where PVE puts the interfaces file and how meta_data.json
// names it (relative to openstack/; Cloudinit.pm configdrive2_metadata).
const contentPath = "/content/0000"

type openstackMeta struct {
	UUID          string      `json:"uuid"`
	Hostname      string      `json:"hostname,omitempty"`
	NetworkConfig *contentRef `json:"network_config,omitempty"`
}

type contentRef struct {
	ContentPath string `json:"content_path"`
}

func (s Seed) configDrive2() ([]iso9660.File, error) {
	meta := openstackMeta{UUID: s.InstanceID(), Hostname: s.Hostname}
	if len(s.NetworkConfig) > 0 {
		meta.NetworkConfig = &contentRef{ContentPath: contentPath}
	}
	md, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode meta_data.json: %w", err)
	}
	files := []iso9660.File{
		{Path: "openstack/latest/meta_data.json", Data: append(md, '\n')},
		{Path: "openstack/latest/user_data", Data: nonNil(s.UserData)},
	}
	if len(s.NetworkConfig) > 0 {
		files = append(files, iso9660.File{Path: "openstack" + contentPath, Data: s.NetworkConfig})
	}
	if len(s.NetworkData) > 0 {
		files = append(files, iso9660.File{Path: "openstack/latest/network_data.json", Data: s.NetworkData})
	}
	if len(s.VendorData) > 0 {
		vd, err := json.Marshal(string(s.VendorData))
		if err != nil {
			return nil, fmt.Errorf("encode vendor_data.json: %w", err)
		}
		files = append(files, iso9660.File{Path: "openstack/latest/vendor_data.json", Data: append(vd, '\n')})
	}
	return files, nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
