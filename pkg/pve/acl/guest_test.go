package acl

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGuestOptions(t *testing.T) {
	tests := []struct {
		name string
		got  Option
		want Option
	}{
		{"qemu cores", QemuOption("cores"), Option{Privs: []string{"VM.Config.CPU"}}},
		{"qemu numa1", QemuOption("numa1"), Option{Privs: []string{"VM.Config.CPU"}}},
		{"qemu memory", QemuOption("memory"), Option{Privs: []string{"VM.Config.Memory"}}},
		{"qemu net3", QemuOption("net3"), Option{Privs: []string{"VM.Config.Network"}, ByValue: true}},
		{"qemu ipconfig0", QemuOption("ipconfig0"), Option{Privs: []string{"VM.Config.Cloudinit", "VM.Config.Network"}, Any: true}},
		{"qemu startup", QemuOption("startup"), Option{Privs: []string{"VM.Config.Options"}, Root: []string{"Sys.Modify"}}},
		{"qemu boot", QemuOption("boot"), Option{Privs: []string{"VM.Config.Disk"}}},
		{"qemu scsi30", QemuOption("scsi30"), Option{ByValue: true}},
		{"qemu efidisk0", QemuOption("efidisk0"), Option{ByValue: true}},
		{"qemu hostpci0", QemuOption("hostpci0"), Option{ByValue: true}},
		{"qemu rng0", QemuOption("rng0"), Option{Privs: []string{"VM.Config.HWType"}, ByValue: true}},
		{"qemu args", QemuOption("args"), Option{RootOnly: true}},
		{"qemu hookscript", QemuOption("hookscript"), Option{RootOnly: true}},
		{"qemu scsi31", QemuOption("scsi31"), Option{RootOnly: true}},
		{"ct cores", CTOption("cores"), Option{Privs: []string{"VM.Config.CPU"}}},
		{"ct swap", CTOption("swap"), Option{Privs: []string{"VM.Config.Memory"}}},
		{"ct mp3", CTOption("mp3"), Option{Privs: []string{"VM.Config.Disk"}, ByValue: true}},
		{"ct net0", CTOption("net0"), Option{Privs: []string{"VM.Config.Network"}, ByValue: true}},
		{"ct hostname", CTOption("hostname"), Option{Privs: []string{"VM.Config.Network"}}},
		{"ct dev0", CTOption("dev0"), Option{RootOnly: true}},
		{"ct features", CTOption("features"), Option{ByValue: true}},
		{"ct ostype", CTOption("ostype"), Option{Privs: []string{"VM.Config.Options"}}},
		{"ct mpx", CTOption("mpx"), Option{Privs: []string{"VM.Config.Options"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestDrivePrivs: what changing a drive needs, by what it is.
func TestDrivePrivs(t *testing.T) {
	for val, want := range map[string]string{
		"local-lvm:vm-100-disk-0,size=4G":          "VM.Config.Disk",
		"local:iso/x.iso,media=cdrom":              "VM.Config.CDROM",
		"none,media=cdrom":                         "VM.Config.CDROM",
		"local-lvm:vm-100-cloudinit,media=cdrom":   "VM.Config.Cloudinit,VM.Config.CDROM",
		"file=local:100/vm-100-cloudinit.qcow2":    "VM.Config.Cloudinit,VM.Config.CDROM",
		"local-lvm:4,import-from=local:import/a.q": "VM.Config.Disk",
	} {
		if got := strings.Join(DrivePrivs(val), ","); got != want {
			t.Errorf("DrivePrivs(%q): got %s, want %s", val, got, want)
		}
	}
}
