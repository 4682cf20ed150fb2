package cidata

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

func webSeed() Seed {
	return Seed{
		Hostname:      "web01",
		UserData:      []byte("#cloud-config\npackages: [nginx]\n"),
		NetworkConfig: []byte("version: 2\nethernets:\n  eth0: {dhcp4: true}\n"),
	}
}

func cd2Seed() Seed {
	return Seed{
		Format:        ConfigDrive2,
		Hostname:      "web01.example.test",
		UserData:      []byte("#cloud-config\npackages: [nginx]\n"),
		NetworkConfig: []byte("auto lo\niface lo inet loopback\n\nauto eth0\niface eth0 inet dhcp\n"),
		NetworkData:   []byte(`{"links": [], "networks": [], "services": []}`),
		VendorData:    []byte("#cloud-config\nruncmd: [\"echo \\\"vendor\\\"\"]\n"),
	}
}

func build(t *testing.T, s Seed) []byte {
	t.Helper()
	img, err := Build(s)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return img
}

// Golden values: a change to any of them changes every config drive's
// volume name, so each user's VMs get re-pointed at the next apply. Update
// them only for a deliberate change of the layout or the writer.
const (
	goldenInstanceID = "3371b9fc-d921-8bf6-afc6-342027734b6a"
	goldenHash       = "fdf846cd2b3e"
)

func TestGolden(t *testing.T) {
	if got := webSeed().InstanceID(); got != goldenInstanceID {
		t.Errorf("InstanceID() = %q, want %q", got, goldenInstanceID)
	}
	if got := Hash(build(t, webSeed())); got != goldenHash {
		t.Errorf("Hash(Build(webSeed)) = %q, want %q", got, goldenHash)
	}
}

func TestBuildDeterministic(t *testing.T) {
	// Each seed is made twice, so the second build shares no value with
	// the first: equal inputs, not the same input, give equal outputs.
	for _, mk := range []func() Seed{webSeed, cd2Seed, func() Seed { return Seed{} }, func() Seed { return Seed{Format: ConfigDrive2} }} {
		s1, s2 := mk(), mk()
		t.Run(string(s1.format()), func(t *testing.T) {
			a, b := build(t, s1), build(t, s2)
			if !bytes.Equal(a, b) {
				t.Fatal("two builds of the same seed differ")
			}
			if Hash(a) != Hash(b) || s1.InstanceID() != s2.InstanceID() {
				t.Fatal("hash or instance-id differ between builds")
			}
		})
	}
}

// TestEveryFieldCounts: each field changes the image, its hash and the
// instance-id, so neither a new volume nor cloud-init misses a change.
func TestEveryFieldCounts(t *testing.T) {
	base := cd2Seed()
	tests := []struct {
		name   string
		change func(*Seed)
	}{
		{"format", func(s *Seed) { s.Format, s.NetworkData = NoCloud, nil }},
		{"hostname", func(s *Seed) { s.Hostname = "web02" }},
		{"no hostname", func(s *Seed) { s.Hostname = "" }},
		{"user data", func(s *Seed) { s.UserData = append(s.UserData, '\n') }},
		{"network config", func(s *Seed) { s.NetworkConfig = s.NetworkConfig[:len(s.NetworkConfig)-1] }},
		{"network data", func(s *Seed) { s.NetworkData = []byte(`{"links": []}`) }},
		{"vendor data", func(s *Seed) { s.VendorData = nil }},
		// Field boundaries are part of the hash: moving bytes from one
		// field to the next is a different seed.
		{"bytes moved between fields", func(s *Seed) {
			s.UserData = append(append([]byte{}, s.UserData...), s.NetworkConfig[:4]...)
			s.NetworkConfig = s.NetworkConfig[4:]
		}},
	}
	baseImg, baseID := build(t, base), base.InstanceID()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			tt.change(&s)
			img := build(t, s)
			if Hash(img) == Hash(baseImg) {
				t.Error("hash unchanged")
			}
			if s.InstanceID() == baseID {
				t.Error("instance-id unchanged")
			}
		})
	}
}

func TestInstanceIDIsUUID(t *testing.T) {
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	for _, s := range []Seed{webSeed(), cd2Seed(), {}} {
		if id := s.InstanceID(); !uuid.MatchString(id) {
			t.Errorf("InstanceID() = %q, not an RFC 9562 version 8 UUID", id)
		}
	}
}

func fileMap(t *testing.T, s Seed) map[string]string {
	t.Helper()
	files, err := s.files()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, f := range files {
		m[f.Path] = string(f.Data)
	}
	return m
}

func TestNoCloudLayout(t *testing.T) {
	s := webSeed()
	s.VendorData = []byte("#cloud-config\n")
	got := fileMap(t, s)
	want := map[string]string{
		"user-data":      string(s.UserData),
		"meta-data":      "instance-id: " + s.InstanceID() + "\nlocal-hostname: \"web01\"\n",
		"network-config": string(s.NetworkConfig),
		"vendor-data":    "#cloud-config\n",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	bare := fileMap(t, Seed{})
	if diff := cmp.Diff(map[string]string{"user-data": "", "meta-data": "instance-id: " + Seed{}.InstanceID() + "\n"}, bare); diff != "" {
		t.Errorf("an empty seed still has the two files NoCloud requires (-want +got):\n%s", diff)
	}
}

// TestMetaDataYAML: cloud-init loads meta-data as YAML; hostnames that
// YAML would read as numbers or booleans must stay strings.
func TestMetaDataYAML(t *testing.T) {
	for _, h := range []string{"web01", "1234", "yes", "on", "null", "0x10", "1e3"} {
		t.Run(h, func(t *testing.T) {
			s := Seed{Hostname: h}
			var md map[string]any
			if err := yaml.Unmarshal([]byte(fileMap(t, s)["meta-data"]), &md); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"instance-id": s.InstanceID(), "local-hostname": h}
			if diff := cmp.Diff(want, md); diff != "" {
				t.Errorf("meta-data (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigDrive2Layout(t *testing.T) {
	s := cd2Seed()
	got := fileMap(t, s)
	var meta map[string]any
	if err := json.Unmarshal([]byte(got["openstack/latest/meta_data.json"]), &meta); err != nil {
		t.Fatalf("meta_data.json: %v", err)
	}
	wantMeta := map[string]any{
		"uuid":           s.InstanceID(),
		"hostname":       "web01.example.test",
		"network_config": map[string]any{"content_path": "/content/0000"},
	}
	if diff := cmp.Diff(wantMeta, meta); diff != "" {
		t.Errorf("meta_data.json (-want +got):\n%s", diff)
	}
	var vendor string
	if err := json.Unmarshal([]byte(got["openstack/latest/vendor_data.json"]), &vendor); err != nil || vendor != string(s.VendorData) {
		t.Errorf("vendor_data.json = %q (%v), want the vendor data as a JSON string", got["openstack/latest/vendor_data.json"], err)
	}
	delete(got, "openstack/latest/meta_data.json")
	delete(got, "openstack/latest/vendor_data.json")
	want := map[string]string{
		"openstack/latest/user_data":         string(s.UserData),
		"openstack/content/0000":             string(s.NetworkConfig),
		"openstack/latest/network_data.json": string(s.NetworkData),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}

	bare := fileMap(t, Seed{Format: ConfigDrive2})
	if diff := cmp.Diff([]string{"openstack/latest/meta_data.json", "openstack/latest/user_data"}, sortedKeys(bare)); diff != "" {
		t.Errorf("a bare config drive (-want +got):\n%s", diff)
	}
	if strings.Contains(bare["openstack/latest/meta_data.json"], "network_config") {
		t.Error("meta_data.json names a network config that is not there")
	}
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		seed Seed
		want string
	}{
		{"unknown format", Seed{Format: "opennebula"}, `format "opennebula"`},
		{"hostname with space", Seed{Hostname: "web 01"}, "hostname"},
		{"hostname with underscore", Seed{Hostname: "web_01"}, "hostname"},
		{"hostname leading hyphen", Seed{Hostname: "-web"}, "hostname"},
		{"hostname empty label", Seed{Hostname: "web..test"}, "hostname"},
		{"hostname newline", Seed{Hostname: "web\nuser: root"}, "hostname"},
		{"hostname label too long", Seed{Hostname: strings.Repeat("a", 64)}, "hostname"},
		{"network data for nocloud", Seed{NetworkData: []byte(`{}`)}, "only for format"},
		{"network data not json", Seed{Format: ConfigDrive2, NetworkData: []byte("version: 2")}, "not a JSON object"},
		{"network data a json array", Seed{Format: ConfigDrive2, NetworkData: []byte("[]")}, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.seed.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate: got %v, want an error containing %q", err, tt.want)
			}
			if _, berr := Build(tt.seed); berr == nil {
				t.Error("Build accepted what Validate refused")
			}
		})
	}
	for _, s := range []Seed{{}, webSeed(), cd2Seed(), {Hostname: "a"}, {Hostname: strings.Repeat("a", 63) + ".b"}} {
		if err := s.Validate(); err != nil {
			t.Errorf("Validate(%+v): %v", s.Hostname, err)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"": NoCloud, "nocloud": NoCloud, "configdrive2": ConfigDrive2} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"NoCloud", "configdrive", "opennebula"} {
		if _, err := ParseFormat(in); err == nil {
			t.Errorf("ParseFormat(%q) accepted", in)
		}
	}
	if NoCloud.Label() != "cidata" || ConfigDrive2.Label() != "config-2" {
		t.Errorf("labels %q %q", NoCloud.Label(), ConfigDrive2.Label())
	}
}

func TestVolumeName(t *testing.T) {
	img := build(t, webSeed())
	name, err := VolumeName("seed-web01", img)
	if err != nil {
		t.Fatal(err)
	}
	if want := "seed-web01-" + Hash(img) + ".iso"; name != want {
		t.Errorf("VolumeName = %q, want %q", name, want)
	}
	if len(Hash(img)) != HashLen {
		t.Errorf("Hash has %d digits, want %d", len(Hash(img)), HashLen)
	}
	for _, bad := range []string{"", "seed web", "seed/web", "séed"} {
		if _, err := VolumeName(bad, img); err == nil {
			t.Errorf("VolumeName(%q) accepted", bad)
		}
	}

	tests := []struct {
		name, file string
		hash       string
		ok         bool
	}{
		{"seed-web01", "seed-web01-0123456789ab.iso", "0123456789ab", true},
		{"seed-web01", "seed-web01-0123456789ab.img", "", false},
		{"seed-web01", "seed-web01-0123456789AB.iso", "", false},
		{"seed-web01", "seed-web01-0123456789a.iso", "", false},
		{"seed-web01", "seed-web01-extra-0123456789ab.iso", "", false}, // another drive's
		{"seed", "seed-web01-0123456789ab.iso", "", false},
		{"seed-web01", "xseed-web01-0123456789ab.iso", "", false},
		{"seed-web01", "seed-web01.iso", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			hash, ok := ParseVolumeName(tt.name, tt.file)
			if hash != tt.hash || ok != tt.ok {
				t.Errorf("ParseVolumeName(%q, %q) = %q, %v; want %q, %v", tt.name, tt.file, hash, ok, tt.hash, tt.ok)
			}
		})
	}
	if hash, ok := ParseVolumeName("seed-web01", name); !ok || hash != Hash(img) {
		t.Errorf("ParseVolumeName does not read back VolumeName's %q", name)
	}
}
