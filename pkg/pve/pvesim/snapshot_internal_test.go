package pvesim

import "testing"

// A snapshot with RAM is refused for AMD SEV, Intel TDX and virtiofs
// (qemu-server QemuMigrate/Helpers.pm check_non_migratable_resources);
// the API refuses setting them for anyone but root@pam, so this is
// tested on the function.
func TestRAMBlockers(t *testing.T) {
	cases := []struct {
		conf    map[string]string
		vmstate bool
		want    string
	}{
		{map[string]string{"amd-sev": "type=std"}, true, "Cannot live-migrate, snapshot (with RAM), or hibernate a VM with: amd-sev"},
		{map[string]string{"amd-sev": "type=std", "virtiofs0": "dirid=x"}, true, "Cannot live-migrate, snapshot (with RAM), or hibernate a VM with: amd-sev, virtiofs"},
		{map[string]string{"amd-sev": "type=std"}, false, ""},
		{map[string]string{"memory": "1024"}, true, ""},
	}
	for _, tc := range cases {
		err := ramBlockers(&vm{Conf: tc.conf}, tc.vmstate)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%v vmstate=%v: got %q, want %q", tc.conf, tc.vmstate, got, tc.want)
		}
	}
}
