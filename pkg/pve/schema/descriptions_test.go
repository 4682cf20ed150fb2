package schema

import (
	"os"
	"strings"
	"testing"
)

func TestReadDescriptions(t *testing.T) {
	raw, err := os.ReadFile(apidocPath)
	if err != nil {
		t.Fatal(err)
	}
	// apidoc.js as pve-docs builds it: the list assigned to a constant,
	// then the viewer's own code (with brackets of its own).
	js := "const apiSchema = " + string(raw) + ";\n\nlet store = [1, 2];\nfunction f(a) { return a[0]; }\n"
	for name, input := range map[string]string{"json": string(raw), "apidoc.js": js} {
		t.Run(name, func(t *testing.T) {
			d, err := ReadDescriptions(strings.NewReader(input))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct{ got, want string }{
				{d.Param("POST", "/nodes/{node}/qemu", "memory"), "Memory properties."},
				{d.Param("post", "/nodes/{node}/qemu", "net7"), "Specify network devices."},
				{d.SubKey("POST", "/nodes/{node}/qemu", "net0", "tag"), "VLAN tag to apply to packets on this interface."},
				{d.Param("POST", "/nodes/{node}/qemu", "nosuch"), ""},
				{d.SubKey("POST", "/nodes/{node}/qemu", "memory", "nosuch"), ""},
			} {
				if c.got != c.want {
					t.Errorf("got %q, want %q", c.got, c.want)
				}
			}
		})
	}
}

func TestReadDescriptionsRefusesOtherFiles(t *testing.T) {
	for name, input := range map[string]string{
		"empty":      "",
		"object":     `{"a": 1}`,
		"no list":    "const apiSchema = 42;",
		"empty list": "[]",
		"broken":     "[{\"path\": ",
	} {
		t.Run(name, func(t *testing.T) {
			if d, err := ReadDescriptions(strings.NewReader(input)); err == nil {
				t.Errorf("got %d methods, want an error", d.Len())
			}
		})
	}
}

func TestNilDescriptionsKnowNothing(t *testing.T) {
	var d *Descriptions
	if got := d.Param("POST", "/pools", "poolid") + d.SubKey("POST", "/pools", "poolid", "x"); got != "" || d.Len() != 0 {
		t.Errorf("nil descriptions: got %q, %d methods", got, d.Len())
	}
}
