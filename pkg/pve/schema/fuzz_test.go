package schema

import (
	"maps"
	"testing"
)

// FuzzPropertyStringRoundTrip: whatever ParsePropertyString accepts,
// FormatPropertyString renders back to a string that parses to the same
// items — with no schema, and with the schemas of a NIC (default key and
// key alias) and a disk (default key, many sub-keys).
func FuzzPropertyStringRoundTrip(f *testing.F) {
	qm := mustMethod(f, "POST", "/nodes/{node}/qemu")
	net, _ := qm.Param("net0")
	scsi, _ := qm.Param("scsi0")
	params := []*Param{nil, net, scsi}
	for _, seed := range []string{
		"virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=100",
		"e1000,bridge=vmbr0",
		"local-lvm:vm-100-disk-0,size=32G,discard=on",
		`a="x,y",b=2`,
		`a="say \"hi\" \\o/"`,
		"a=1,,b=2,",
		`a=""`,
		"a= ",
		"=x",
		`"quoted=bare",k=v`,
	} {
		for i := range params {
			f.Add(seed, uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, s string, which uint8) {
		p := params[int(which)%len(params)]
		items, err := ParsePropertyString(s, p)
		if err != nil {
			return
		}
		out := FormatPropertyString(items, p)
		again, err := ParsePropertyString(out, p)
		if err != nil {
			t.Fatalf("%q parsed to %q, formatted as %q, which does not parse: %v", s, items, out, err)
		}
		if a, b := asMap(items), asMap(again); !maps.Equal(a, b) {
			t.Fatalf("%q parsed to %q, formatted as %q, which parses to %q", s, items, out, again)
		}
	})
}

// asMap keys the items (parsing refuses duplicate keys); Format may move
// the default key to the front, as PVE writes it.
func asMap(items []KV) map[string]string {
	m := make(map[string]string, len(items))
	for _, it := range items {
		m[it.Key] = it.Value
	}
	return m
}
