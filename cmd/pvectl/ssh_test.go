package main

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/provision"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// TestRepinWriteDigest: a description edited after repin read the config
// is not overwritten: PVE refuses the stale digest, repin exits 1 saying
// so, and the edit stays.
func TestRepinWriteDigest(t *testing.T) {
	env := startSim(t)
	ctx := context.Background()
	if err := env.client.CreateQemu(ctx, "pve", url.Values{"vmid": {"150"}, "name": {"dg"}, "description": {"before"}}); err != nil {
		t.Fatal(err)
	}
	cfg, err := env.client.GuestConfig(ctx, pve.QEMU, "pve", 150)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.client.UpdateQemu(ctx, "pve", 150, url.Values{"description": {"edited meanwhile"}}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o := &repinOptions{g: &globalOptions{streams: Streams{Out: &out, Err: &out}}, yes: true}
	row := &pve.ClusterResource{Node: "pve", VMID: 150, Name: "dg"}
	pin := "ssh-ed25519 SHA256:" + strings.Repeat("A", 43)
	err = o.write(ctx, env.client, &spec.Resource{Kind: "QemuVM", Name: "dg"}, row, cfg.Get("digest"), cfg.Get("description"), provision.State{}, pin, "127.0.0.1:22")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitFailure || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("write with a stale digest: %v", err)
	}
	if d := env.vmConfig("dg").Get("description"); d != "edited meanwhile" {
		t.Errorf("description %q, want the edit kept", d)
	}
}
