package spec

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/cidata"
)

const seedDoc = `kind: ConfigDriveISO
name: seed-web01
spec:
  node: pve
  storage: local
  hostname: web01
  userData: |
    #cloud-config
    packages: [nginx]
`

const vmWithDrive = `---
kind: QemuVM
name: web01
spec:
  node: pve
  memory: 512
  configDrive: seed-web01
`

// TestConfigDriveLoad: Load builds the image, names its volume by the
// content hash, attaches it to the VM that names it at ide3 with
// media=cdrom, and makes the VM depend on it.
func TestConfigDriveLoad(t *testing.T) {
	set := mustLoad(t, map[string]string{"a.yaml": seedDoc + vmWithDrive}, nil)
	iso := set.Lookup("ConfigDriveISO/seed-web01")
	vm := set.Lookup("QemuVM/web01")
	img, err := cidata.Build(cidata.Seed{Hostname: "web01", UserData: []byte("#cloud-config\npackages: [nginx]\n")})
	if err != nil {
		t.Fatal(err)
	}
	want := "seed-web01-" + cidata.Hash(img) + ".iso"
	if got := iso.Params.Get("filename"); got != want {
		t.Errorf("filename: got %q want %q (the hash of the image the seed builds)", got, want)
	}
	if got := vm.Params.Get("ide3"); got != "local:iso/"+want+",media=cdrom" {
		t.Errorf("ide3: got %q", got)
	}
	if !slices.Contains(set.DepGraph().Deps["QemuVM/web01"], "ConfigDriveISO/seed-web01") {
		t.Errorf("deps of the VM: %v, want the config drive", set.DepGraph().Deps["QemuVM/web01"])
	}
	// Same seed, same name: a second load is byte-identical.
	again := mustLoad(t, map[string]string{"a.yaml": seedDoc + vmWithDrive}, nil)
	if got := again.Lookup("ConfigDriveISO/seed-web01").Params.Get("filename"); got != want {
		t.Errorf("second load: got %q want %q", got, want)
	}
	// Another user-data is another volume.
	edited := mustLoad(t, map[string]string{"a.yaml": strings.Replace(seedDoc, "nginx", "apache2", 1) + vmWithDrive}, nil)
	if got := edited.Lookup("ConfigDriveISO/seed-web01").Params.Get("filename"); got == want || !strings.HasPrefix(got, "seed-web01-") {
		t.Errorf("edited seed: got %q, want another seed-web01-<hash>.iso", got)
	}
}

func TestImageDiagnostics(t *testing.T) {
	const dl = `kind: DownloadedImage
name: debian
spec:
  storage: local
  content: import
  filename: debian-12.qcow2
  url: https://cloud.debian.org/images/debian-12.qcow2
`
	tests := []struct {
		name  string
		yaml  string
		diags []string // regexps, in order
	}{
		{"config drive not in the specs", vmWithDrive,
			[]string{`a\.yaml:7: QemuVM/web01: configDrive: no ConfigDriveISO named "seed-web01" in these specs`}},
		{"config drive absent", strings.Replace(seedDoc, "spec:", "state: absent\nspec:", 1) + vmWithDrive,
			[]string{`a\.yaml:\d+: QemuVM/web01: configDrive: ConfigDriveISO/seed-web01 has state: absent`}},
		{"ide3 taken", seedDoc + vmWithDrive + "  ide3: none,media=cdrom\n",
			[]string{`a\.yaml:\d+: QemuVM/web01: ide3 is where configDrive attaches ConfigDriveISO/seed-web01`}},
		{"containers take no config drive", "kind: LxcContainer\nname: ct\nspec:\n  configDrive: x\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n",
			[]string{`unknown field "configDrive" in LxcContainer spec`}},
		{"bad network data", strings.Replace(seedDoc, "hostname: web01", "networkData: '[1]'\n  format: configdrive2", 1),
			[]string{`a\.yaml:6: ConfigDriveISO/seed-web01: network data is not a JSON object`}},
		{"bad hostname", strings.Replace(seedDoc, "web01\n  userData", "-web\n  userData", 1),
			[]string{`a\.yaml:6: ConfigDriveISO/seed-web01: hostname "-web"`}},
		{"bad format", strings.Replace(seedDoc, "hostname: web01", "format: cloud", 1),
			[]string{`a\.yaml:6: ConfigDriveISO/seed-web01: format "cloud"`}},
		{"name PVE would rename", strings.Replace(seedDoc, "name: seed-web01", "name: seed web01", 1),
			[]string{`ConfigDriveISO/seed web01: the name is the image's file name: .*character ' '`}},
		{"no storage", strings.Replace(seedDoc, "  storage: local\n", "", 1),
			[]string{`ConfigDriveISO/seed-web01: spec.storage is required`}},
		{"filename PVE would normalise", strings.Replace(dl, "debian-12.qcow2", "debian 12.qcow2", 1),
			[]string{`a\.yaml:6: DownloadedImage/debian: PVE would store file "debian 12.qcow2" as "debian_12.qcow2"`}},
		{"wrong extension", strings.Replace(dl, "content: import", "content: iso", 1),
			[]string{`a\.yaml:6: DownloadedImage/debian: file "debian-12.qcow2": content iso takes a name ending in .iso or .img`}},
		{"name as filename", strings.Replace(dl, "  filename: debian-12.qcow2\n", "", 1),
			[]string{`a\.yaml:2: DownloadedImage/debian: file "debian": content import takes`}},
		{"compression of a template", strings.Replace(dl, "content: import", "content: vztmpl\n  compression: zst", 1),
			[]string{`compression zst: PVE decompresses only ISO images`, `file "debian-12.qcow2": content vztmpl`}},
		{"unknown compression", strings.Replace(dl, "content: import\n  filename: debian-12.qcow2", "content: iso\n  filename: debian-12.iso\n  compression: xz", 1),
			[]string{`compression "xz": want one of gz, lzo, zst, bz2`}},
		{"checksum alone", dl + "  checksum: abc\n", []string{`spec.checksum needs checksum-algorithm beside it: PVE refuses checksum without checksum-algorithm`}},
		{"algorithm alone", dl + "  checksum-algorithm: sha256\n", []string{`spec.checksum-algorithm needs checksum beside it`}},
		{"no url", strings.Replace(dl, "  url: https://cloud.debian.org/images/debian-12.qcow2\n", "", 1),
			[]string{`spec.url is required`}},
		{"read only without url", strings.Replace(strings.Replace(dl, "  url: https://cloud.debian.org/images/debian-12.qcow2\n", "", 1), "spec:", "managed: false\nspec:", 1), nil},
		{"same file twice", dl + "---\n" + strings.Replace(dl, "name: debian", "name: debian2", 1),
			[]string{`DownloadedImage/debian2 has the same volume local:import/debian-12.qcow2 on the default node as DownloadedImage/debian`}},
		{"unknown key", dl + "  content-type: x\n", []string{`unknown field "content-type" in DownloadedImage spec`}},
		{"upload keys are pvectl's", seedDoc + "  filename: x.iso\n", []string{`unknown field "filename" in ConfigDriveISO spec`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := loadFiles(t, map[string]string{"a.yaml": tc.yaml}, nil)
			if len(diags) != len(tc.diags) {
				t.Fatalf("got %d diagnostics, want %d:\n%s", len(diags), len(tc.diags), strings.Join(diags, "\n"))
			}
			for i, re := range tc.diags {
				if !regexp.MustCompile(re).MatchString(diags[i]) {
					t.Errorf("diagnostic %d: got %q, want /%s/", i, diags[i], re)
				}
			}
		})
	}
}

// TestImageRefs: a guest that names a downloaded file (an ISO on a
// CD-ROM, an import-from source, a container template) waits for it.
func TestImageRefs(t *testing.T) {
	set := mustLoad(t, map[string]string{"a.yaml": `kind: DownloadedImage
name: noble
spec:
  storage: local
  content: import
  filename: noble.qcow2
  url: https://cloud-images.ubuntu.com/noble.qcow2
---
kind: DownloadedImage
name: debian-iso
spec:
  storage: local
  content: iso
  filename: debian.iso
  url: https://cdimage.debian.org/debian.iso
---
kind: DownloadedImage
name: tmpl
spec:
  storage: local
  content: vztmpl
  filename: alpine.tar.xz
  url: https://images.linuxcontainers.org/alpine.tar.xz
---
kind: QemuVM
name: vm
spec:
  scsi0: local-lvm:0,import-from=local:import/noble.qcow2
  ide2: local:iso/debian.iso,media=cdrom
---
kind: LxcContainer
name: ct
spec:
  ostemplate: local:vztmpl/alpine.tar.xz
`}, nil)
	want := map[string][]string{
		"QemuVM/vm":       {"DownloadedImage/debian-iso", "DownloadedImage/noble"},
		"LxcContainer/ct": {"DownloadedImage/tmpl"},
	}
	for addr, deps := range want {
		if diff := cmp.Diff(deps, set.DepGraph().Deps[addr]); diff != "" {
			t.Errorf("deps of %s (-want +got):\n%s", addr, diff)
		}
	}
}

// TestConfigDriveFiles: userDataFile and the other …File keys are read
// relative to the spec file that names them, into the data the image and
// the plan carry.
func TestConfigDriveFiles(t *testing.T) {
	doc := `kind: ConfigDriveISO
name: seed
spec:
  storage: local
  userDataFile: cloud/user-data.yaml
  networkConfigFile: cloud/net.yaml
`
	set, diags := loadFiles(t, map[string]string{
		"specs/a.yaml":               doc,
		"specs/cloud/user-data.yaml": "#cloud-config\npackages: [vim]\n",
		"specs/cloud/net.yaml":       "version: 2\n",
	}, nil, "specs/a.yaml")
	if diags != nil {
		t.Fatalf("Load: %s", strings.Join(diags, "\n"))
	}
	r := set.Lookup("ConfigDriveISO/seed")
	k := r.Keys.(*ConfigDriveKeys)
	if k.UserData != "#cloud-config\npackages: [vim]\n" || k.NetworkConfig != "version: 2\n" {
		t.Errorf("got userData %q, networkConfig %q, want the files' bytes", k.UserData, k.NetworkConfig)
	}
	inline := mustLoad(t, map[string]string{"a.yaml": "kind: ConfigDriveISO\nname: seed\nspec:\n  storage: local\n" +
		"  userData: |\n    #cloud-config\n    packages: [vim]\n  networkConfig: |\n    version: 2\n"}, nil)
	if got, want := r.Params.Get("filename"), inline.Lookup("ConfigDriveISO/seed").Params.Get("filename"); got != want {
		t.Errorf("from files: %s, inline: %s, want the same image", got, want)
	}

	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"missing file", doc, `a\.yaml:5: ConfigDriveISO/seed: userDataFile: open .*cloud/user-data\.yaml: no such file`},
		{"both", strings.Replace(doc, "  networkConfigFile: cloud/net.yaml\n", "  userData: x\n", 1),
			`a\.yaml:5: ConfigDriveISO/seed: give userData or userDataFile, not both`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := loadFiles(t, map[string]string{"a.yaml": tc.doc, "cloud/net.yaml": "version: 2\n"}, nil)
			if len(diags) != 1 || !regexp.MustCompile(tc.want).MatchString(diags[0]) {
				t.Errorf("got %q, want /%s/", diags, tc.want)
			}
		})
	}
}
