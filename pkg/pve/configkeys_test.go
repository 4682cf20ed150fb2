package pve

import (
	"encoding/json"
	"testing"
	"unsafe"
)

// Decoded configs share their keys' bytes (a plan holds every guest's
// config at once), and keep their values.
func TestConfigKeysShared(t *testing.T) {
	var a, b *Config
	if err := json.Unmarshal([]byte(`{"memory":512,"net0":"virtio,bridge=vmbr0","onboot":true,"x":null}`), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"memory":1024,"net0":"e1000,bridge=vmbr1"}`), &b); err != nil {
		t.Fatal(err)
	}
	if a.Get("memory") != "512" || b.Get("memory") != "1024" || a.Get("onboot") != "1" || a.Len() != 3 || b.Get("net0") != "e1000,bridge=vmbr1" {
		t.Fatalf("decoded %v and %v", a, b)
	}
	keyData := func(c *Config, key string) *byte {
		for k := range c.All() {
			if k == key {
				return unsafe.StringData(k)
			}
		}
		return nil
	}
	for _, key := range []string{"memory", "net0"} {
		if pa, pb := keyData(a, key), keyData(b, key); pa == nil || pa != pb {
			t.Errorf("key %q: two copies (%p, %p), want one", key, pa, pb)
		}
	}
}
