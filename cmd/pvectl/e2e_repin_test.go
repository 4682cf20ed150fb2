package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pvectl/pvectl/pkg/provision/provisiontest"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// TestE2ESSHRepin: a VM whose description pins a key its guest no longer
// presents (a rebuild) is re-pinned by `ssh repin --yes`, which shows both
// fingerprints and changes only the pin; without --yes off a terminal it
// refuses with exit 3 and writes nothing; run again it finds the same key
// and changes nothing; provisioning then trusts the guest again.
func TestE2ESSHRepin(t *testing.T) {
	r := newProvRig(t, startSim(t), "ansible-playbook")
	r.playbook("site.yaml", "one", false)
	r.write("vm.yaml", fmt.Sprintf("kind: QemuVM\nname: rp\nspec:\n  image: \"9000\"\n  ip: %s\n  sshPort: %d\n  sshUser: %s\n  provision: [site.yaml]\n",
		r.sshd.Host, r.sshd.Port, r.sshd.User))
	spec := filepath.Join(r.dir, "vm.yaml")
	r.mustRun(0, "apply", "-f", spec, "--auto-approve")
	good := r.description("rp")
	realPin := "ssh-ed25519 " + fingerprintOf(r.sshd)
	if !strings.Contains(good, "[pvectl-hostkey: "+realPin+"]") {
		t.Fatalf("description after apply: %q", good)
	}

	// The key pinned before the "rebuild": another ed25519 key.
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	old, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	oldPin := "ssh-ed25519 " + ssh.FingerprintSHA256(old)
	const note = "Web frontend — ask #team-web.\n  indented, trailing space \n"
	stale := note + strings.Replace(good, realPin, oldPin, 1)
	r.setDescription("rp", stale)
	var outputs []string

	// Off a terminal, without --yes: exit 3, nothing written, no SSH.
	conns := r.sshd.Connections()
	res := r.mustRun(3, "ssh", "repin", "QemuVM/rp", "-f", spec)
	outputs = append(outputs, res.stdout+res.stderr)
	if !strings.Contains(res.stderr, "--yes") {
		t.Errorf("refusal does not name --yes:\n%s", res.stderr)
	}
	if d := r.description("rp"); d != stale {
		t.Errorf("description changed without confirmation: %q", d)
	}
	if n := r.sshd.Connections(); n != conns {
		t.Errorf("refused repin opened %d ssh connections", n-conns)
	}

	res = r.mustRun(0, "ssh", "repin", "QemuVM/rp", "-f", spec, "--yes")
	outputs = append(outputs, res.stdout+res.stderr)
	containsAll(t, "repin output", res.stdout, "pinned:    "+oldPin, "presented: "+realPin, "Pinned "+realPin)
	if d, want := r.description("rp"), note+good; d != want {
		t.Errorf("description after repin:\n%q\nwant\n%q", d, want)
	}

	// The same key again: said so, nothing written.
	res = r.mustRun(0, "ssh", "repin", "QemuVM/rp", "-f", spec, "--yes")
	outputs = append(outputs, res.stdout+res.stderr)
	if !strings.Contains(res.stdout, "nothing to change") || strings.Contains(res.stdout, "Pinned ") {
		t.Errorf("repin of the pinned key:\n%s", res.stdout)
	}
	if d, want := r.description("rp"), note+good; d != want {
		t.Errorf("description after the second repin: %q", d)
	}

	// The plan is clean, and provisioning trusts the guest again.
	r.mustRun(0, "plan", "-f", spec, "--detailed-exitcode")
	r.playbook("site.yaml", "two", false)
	res = r.mustRun(0, "apply", "-f", spec, "--auto-approve")
	outputs = append(outputs, res.stdout+res.stderr)
	if got := r.runs(); got != "one\ntwo\n" {
		t.Errorf("runs %q, want one then two", got)
	}
	for i, out := range outputs {
		r.noSecrets(fmt.Sprintf("output %d", i), out)
	}
}

// TestE2ESSHRepinAgentAddress: a DHCP VM is reached at the guest agent's
// lease, as provisioning reaches it; a VM that was never pinned gets its
// first pin; bad input is exit 3 before any call; on a terminal it asks,
// and only "yes" writes the pin.
func TestE2ESSHRepinAgentAddress(t *testing.T) {
	provisiontest.Require(t, "sshd", "ssh")
	sshd := provisiontest.StartSSHD(t)
	env := startSimOpts(t, pvesim.Options{TaskDuration: 30 * time.Millisecond, DHCPRange: netip.MustParsePrefix(sshd.Host + "/32")}, nil)
	r := &provRig{simEnv: env, sshd: sshd, dir: t.TempDir(), out: t.TempDir()}
	r.write("vm.yaml", fmt.Sprintf("kind: QemuVM\nname: dhcp-vm\nspec:\n  image: \"9000\"\n  sshPort: %d\n---\nkind: LinuxBridge\nname: vmbr9\nspec: {}\n", sshd.Port))
	spec := filepath.Join(r.dir, "vm.yaml")
	r.mustRun(0, "apply", "-f", spec, "--auto-approve")
	const note = "no pin yet\n"
	r.setDescription("dhcp-vm", note)

	for _, args := range [][]string{
		{"QemuVM/nope", "--yes"},
		{"LinuxBridge/vmbr9", "--yes"},
		{"QemuVM/dhcp-vm", "--yes", "--address", "127.0.0.1:notaport"},
	} {
		before := r.requests.Total()
		res := r.mustRun(3, append([]string{"ssh", "repin", "-f", spec}, args...)...)
		if n := r.requests.Total() - before; n != 0 {
			t.Errorf("repin %v: %d API calls before refusing:\n%s", args, n, res.stderr)
		}
	}

	res := r.mustRun(0, "ssh", "repin", "QemuVM/dhcp-vm", "-f", spec, "--yes")
	pin := "ssh-ed25519 " + fingerprintOf(sshd)
	containsAll(t, "repin output", res.stdout, "at "+net.JoinHostPort(sshd.Host, fmt.Sprint(sshd.Port)), "pinned:    (none)", "presented: "+pin)
	if d, want := r.description("dhcp-vm"), note+"[pvectl-hostkey: "+pin+"]"; d != want {
		t.Errorf("description %q, want %q", d, want)
	}
	r.mustRun(0, "plan", "-f", spec, "--detailed-exitcode")

	// On a terminal it asks: anything but "yes" writes nothing.
	stale := note + "[pvectl-hostkey: ssh-ed25519 SHA256:" + strings.Repeat("A", 43) + "]"
	for _, answer := range []string{"no", "yes"} {
		r.setDescription("dhcp-vm", stale)
		typer, term := openPTY(t)
		run := r.start(term, "ssh", "repin", "QemuVM/dhcp-vm", "-f", spec)
		run.waitFor("the question", func(out, _ string) bool { return strings.HasSuffix(out, "Enter a value: ") })
		if _, err := typer.WriteString(answer + "\n"); err != nil {
			t.Fatal(err)
		}
		res := run.wait()
		want, code := stale, 1
		if answer == "yes" {
			want, code = note+"[pvectl-hostkey: "+pin+"]", 0
		}
		if d := r.description("dhcp-vm"); res.code != code || d != want {
			t.Errorf("answer %q: exit %d, description %q; want exit %d, %q\n%s%s", answer, res.code, d, code, want, res.stdout, res.stderr)
		}
	}
}
