package importdoc

import "testing"

func TestEnvName(t *testing.T) {
	for in, want := range map[string]string{
		"vm_300_cipassword":         "VM_300_CIPASSWORD",
		"storage_pbs-1_password":    "STORAGE_PBS_1_PASSWORD",
		"user_ci@pve_keys":          "USER_CI_PVE_KEYS",
		"1x":                        "PVE_1X",
		"iface_pve_vmbr0.10_secret": "IFACE_PVE_VMBR0_10_SECRET",
	} {
		if got := envName(in); got != want {
			t.Errorf("envName(%q): got %q want %q", in, got, want)
		}
	}
}
