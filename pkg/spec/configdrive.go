package spec

import (
	"fmt"
	"path/filepath"

	"github.com/pvectl/pvectl/pkg/cidata"
)

// ConfigDriveSlot is the drive a VM's configDrive is attached at: ide3,
// beside ide2, where PVE puts its own cloud-init drive (a VM cloned from a
// cloud-init template keeps that one). PVE refuses an ISO on a drive
// without media=cdrom (qemu-server src/PVE/API2/Qemu.pm,
// check_drive_param).
const ConfigDriveSlot = "ide3"

// ConfigDriveSeed is the cloud-init seed a config drive resource's keys
// describe.
func ConfigDriveSeed(r *Resource) (cidata.Seed, error) {
	k := keysOr[ConfigDriveKeys](r)
	f, err := cidata.ParseFormat(k.Format)
	if err != nil {
		return cidata.Seed{}, err
	}
	s := cidata.Seed{Format: f, Hostname: k.Hostname, UserData: []byte(k.UserData),
		NetworkConfig: bytesOrNil(k.NetworkConfig), NetworkData: bytesOrNil(k.NetworkData), VendorData: bytesOrNil(k.VendorData)}
	return s, s.Validate()
}

func bytesOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// ConfigDriveImage builds a config drive resource's image and returns it
// with its volume name, "<name>-<hash>.iso". The same keys always give the
// same bytes and so the same name.
func ConfigDriveImage(r *Resource) (image []byte, filename string, err error) {
	seed, err := ConfigDriveSeed(r)
	if err != nil {
		return nil, "", err
	}
	img, err := cidata.Build(seed)
	if err != nil {
		return nil, "", err
	}
	name, err := cidata.VolumeName(r.Name, img)
	if err != nil {
		return nil, "", err
	}
	return img, name, nil
}

// buildConfigDrive is a config drive's Check: the image is built at load
// time so that the plan knows its volume name (Params["filename"]), and a
// seed that cannot be built is reported at its key.
func buildConfigDrive(r *Resource) []problem {
	var out []problem
	if _, err := cidata.VolumeName(r.Name, nil); err != nil {
		out = append(out, problem{"", fmt.Sprintf("the name is the image's file name: %v", err)})
		return out
	}
	if r.State != Present {
		return out // every version is removed: no image needed
	}
	if ps := readSeedFiles(r); len(ps) > 0 {
		return append(out, ps...)
	}
	_, name, err := ConfigDriveImage(r)
	if err != nil {
		return append(out, problem{seedKey(r), err.Error()})
	}
	r.Params.Set("filename", name)
	return out
}

// seedKey names the key a seed error is about: the seed checks format,
// then hostname, then networkData.
func seedKey(r *Resource) string {
	k, _ := r.Keys.(*ConfigDriveKeys)
	if k == nil {
		return ""
	}
	f, err := cidata.ParseFormat(k.Format)
	switch {
	case err != nil:
		return "format"
	case (cidata.Seed{Format: f, Hostname: k.Hostname}).Validate() != nil:
		return "hostname"
	case k.NetworkDataFile != "":
		return "networkDataFile"
	}
	return "networkData"
}

// configDriveName is the config drive a VM names.
// configDriveRef is configDriveName as a reference.
func configDriveRef(r *Resource) []refValue {
	var out []refValue
	for _, n := range configDriveName(r) {
		out = append(out, refValue{"configDrive", n})
	}
	return out
}

func configDriveName(r *Resource) []string {
	if g, ok := r.Keys.(*GuestKeys); ok && g != nil && g.ConfigDrive != nil && *g.ConfigDrive != "" {
		return []string{*g.ConfigDrive}
	}
	return nil
}

// attachConfigDrive resolves a VM's configDrive against the config drives
// (of kind) of the specs: the VM gets the drive's current volume at
// ConfigDriveSlot, so a changed seed, which is a new volume, re-points
// the VM by an ordinary config update.
func attachConfigDrive(kind string) func(r *Resource, find func(kind, value string) []*Resource) []problem {
	return func(r *Resource, find func(kind, value string) []*Resource) []problem {
		names := configDriveName(r)
		if len(names) == 0 {
			return nil
		}
		name := names[0]
		drives := find(kind, name)
		if len(drives) == 0 {
			return []problem{{"configDrive", fmt.Sprintf("configDrive: no %s named %q in these specs (on this connection)", kind, name)}}
		}
		d := drives[0]
		if d.State != Present {
			return []problem{{"configDrive", fmt.Sprintf("configDrive: %s has state: absent", d.Address())}}
		}
		if _, set := r.Params.Lookup(ConfigDriveSlot); set || contains(r.Remove, ConfigDriveSlot) {
			return []problem{{ConfigDriveSlot, fmt.Sprintf("%s is where configDrive attaches %s: leave %s out of the spec, or drop configDrive", ConfigDriveSlot, d.Address(), ConfigDriveSlot)}}
		}
		file := d.Params.Get("filename")
		if file == "" {
			return nil // its image could not be built: reported there
		}
		r.Params.Set(ConfigDriveSlot, d.Params.Get("storage")+":iso/"+file+",media=cdrom")
		if p, ok := r.KeyPos.Get("configDrive"); ok {
			r.KeyPos.Set(ConfigDriveSlot, p)
		}
		return nil
	}
}

// readSeedFiles reads the …File keys into their data fields, each path
// relative to the file the key is written in (a spec from stdin: the
// working directory). A plan then carries the data itself.
func readSeedFiles(r *Resource) []problem {
	k, _ := r.Keys.(*ConfigDriveKeys)
	if k == nil {
		return nil
	}
	var out []problem
	for _, f := range []struct {
		key, dataKey string
		path         string
		data         *string
	}{
		{"userDataFile", "userData", k.UserDataFile, &k.UserData},
		{"networkConfigFile", "networkConfig", k.NetworkConfigFile, &k.NetworkConfig},
		{"networkDataFile", "networkData", k.NetworkDataFile, &k.NetworkData},
		{"vendorDataFile", "vendorData", k.VendorDataFile, &k.VendorData},
	} {
		if f.path == "" {
			continue
		}
		if *f.data != "" {
			out = append(out, problem{f.key, fmt.Sprintf("give %s or %s, not both", f.dataKey, f.key)})
			continue
		}
		path := f.path
		if spec := r.KeyPos.File(f.key); !filepath.IsAbs(path) && spec != "" && spec != stdinName {
			path = filepath.Join(filepath.Dir(spec), path)
		}
		b, err := readRegular(path)
		if err != nil {
			out = append(out, problem{f.key, fmt.Sprintf("%s: %v", f.key, err)})
			continue
		}
		*f.data = string(b)
	}
	return out
}
