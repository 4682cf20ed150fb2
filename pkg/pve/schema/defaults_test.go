package schema

import (
	"fmt"
	"strings"
	"testing"
)

// TestDefaultsPassCheck uses the schema against itself: every scalar
// default the apidoc documents should be a valid value of its parameter.
// Defaults written as prose ("same as user") and the few the schema itself
// contradicts are skipped.
func TestDefaultsPassCheck(t *testing.T) {
	contradicted := map[string]bool{
		"POST /nodes/{node}/ceph/restart service":     true, // pattern lacks "ceph"
		"GET /nodes/{node}/config property":           true, // enum lacks "all"
		"POST /nodes/{node}/qemu vcpus":               true, // minimum 1, default 0
		"POST /nodes/{node}/qemu/{vmid}/config vcpus": true,
		"PUT /nodes/{node}/qemu/{vmid}/config vcpus":  true,
	}
	var walk func(name string, p *Param)
	walk = func(name string, p *Param) {
		for k, s := range p.Props {
			walk(name+"."+k, s)
		}
		if p.Default == nil || p.Type == "array" || p.Type == "object" {
			return
		}
		v := fmt.Sprint(p.Default)
		if f, ok := p.Default.(float64); ok {
			v = formatNumber(f)
		}
		if b, ok := ParseBool(v); ok && p.Type == "boolean" {
			// The apidoc documents some boolean defaults as yes/false/off;
			// a client sends them as 1/0.
			v = map[bool]string{true: "1", false: "0"}[b]
		}
		if strings.ContainsAny(v, " ;") || contradicted[name] {
			return
		}
		if err := p.Check(v); err != nil {
			t.Errorf("%s: default %q: %v", name, v, err)
		}
	}
	for key, m := range Default().Methods {
		for name, p := range m.Params {
			walk(key+" "+name, p)
		}
	}
}
