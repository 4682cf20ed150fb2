package planner

// Provisioning (design §4, docs/provisioning.md): the planner's side of
// pkg/provision. Plan asks pendingProvision what would run, from the
// description alone (never the network); apply runs provisionGuest once
// the guest is up. Both take a resource whose keys embed
// spec.ProvisionKeys, so every kind that provisions guests (QemuVM,
// Template) shares them.

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/provision"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/secret"
	"github.com/pvectl/pvectl/pkg/spec"
)

// provisionFiles reads and hashes r's provisioning files, in list order
// (nil when r provisions nothing).
func provisionFiles(r *spec.Resource) ([]provision.File, error) {
	p := spec.Provisioning(r)
	if p == nil || len(p.Provision) == 0 {
		return nil, nil
	}
	if len(p.ProvisionPaths) != len(p.Provision) {
		return nil, fmt.Errorf("%s: the provisioning files were not resolved (load the specs with -f)", r.Address())
	}
	files := make([]provision.File, 0, len(p.Provision))
	for i, name := range p.Provision {
		f, err := provision.NewFile(name, p.ProvisionPaths[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Address(), err)
		}
		files = append(files, f)
	}
	return files, nil
}

// provisionKey is the SSH key provisioning r uses: the resource's
// sshPrivateKey when set, else the connection's connKey ("" leaves it
// to provision.LoadAuth's environment and agent).
func provisionKey(r *spec.Resource, connKey string) string {
	if p := spec.Provisioning(r); p != nil && p.SSHPrivateKey != nil && strings.TrimSpace(*p.SSHPrivateKey) != "" {
		return *p.SSHPrivateKey
	}
	return connKey
}

func provisionPolicy(r *spec.Resource) provision.Policy {
	p := spec.Provisioning(r)
	return provision.Policy{Force: p != nil && p.ForceConfigCheck != nil && *p.ForceConfigCheck}
}

// pendingProvision is what provisioning would run on a guest of r whose
// description is desc: the files that are new, changed or forced, in
// list order. It reads the files and the description, never the network.
func pendingProvision(r *spec.Resource, desc string) ([]engine.ProvisionStep, error) {
	files, err := provisionFiles(r)
	if err != nil || len(files) == 0 {
		return nil, err
	}
	steps, err := provision.Pending(desc, files, provisionPolicy(r))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Address(), err)
	}
	out := make([]engine.ProvisionStep, 0, len(steps))
	for _, s := range steps {
		out = append(out, engine.ProvisionStep{File: s.File.Name, Reason: string(s.Reason), Hash: s.File.Hash, Recorded: s.Recorded})
	}
	return out, nil
}

// planProvision adds to c what provisioning will run on r's guest, whose
// description will be desc when the change is done: c.Provision, a
// reason, and the Provision action for a guest that needs nothing else.
// willRun says whether the guest runs after the change; provisioning a
// guest that will not is an error naming what to do.
func planProvision(r *spec.Resource, c *engine.Change, desc string, willRun bool) error {
	steps, err := pendingProvision(r, desc)
	if err != nil || len(steps) == 0 {
		return err
	}
	if !willRun {
		return fmt.Errorf("%s: %d provisioning file(s) to run but the VM will not be running: set running: true", r.Address(), len(steps))
	}
	c.Provision = steps
	if c.Action == engine.NoOp {
		c.Action = engine.Provision
	}
	c.Reasons = append(c.Reasons, "provision: "+stepList(steps))
	return nil
}

// stepList names the steps with their reasons: "a.yaml (new), b.sh (changed)".
func stepList(steps []engine.ProvisionStep) string {
	files := make([]string, len(steps))
	for i, s := range steps {
		files[i] = s.File + " (" + s.Reason + ")"
	}
	return strings.Join(files, ", ")
}

// provisionTarget is the guest provisionGuest works on.
type provisionTarget struct {
	Node string
	VMID int
	// Name is the guest's name: in messages and the DNS label.
	Name string
	// New: the guest was created or replaced in this run, so a host key
	// that differs from the pin (a clone carries its template's) is
	// pinned anew rather than refused.
	New bool
}

// provisionGuest runs r's pending provisioning files on the guest t, as
// pkg/provision.Run: it reads the guest's description (what ran, the host
// key pin) and config (address, agent), and when anything is pending,
// reaches the guest over SSH and runs the files, writing the
// description back as each one succeeds (the user's text kept byte for
// byte). Progress and the tools' output go to the change's hooks. Nothing
// pending: no connection at all. It returns the files that ran.
func provisionGuest(ctx context.Context, x *engine.Execution, r *spec.Resource, t provisionTarget) ([]string, error) {
	files, err := provisionFiles(r)
	if err != nil || len(files) == 0 {
		return nil, err
	}
	cfg, err := x.Client.GuestConfig(ctx, pve.QEMU, t.Node, t.VMID)
	if err != nil {
		return nil, fmt.Errorf("read vm %d before provisioning: %w", t.VMID, err)
	}
	desc, digest := cfg.Get("description"), cfg.Get("digest")
	policy := provisionPolicy(r)
	steps, err := provision.Pending(desc, files, policy)
	if err != nil {
		return nil, fmt.Errorf("vm %s: %w", t.Name, err)
	}
	if len(steps) == 0 {
		return nil, nil
	}
	p := spec.Provisioning(r)
	conn := x.Conn
	if conn == nil {
		conn = &spec.Connection{}
	}
	auth, err := provision.LoadAuth(provisionKey(r, conn.SSHPrivateKey), nil)
	if err != nil {
		return nil, fmt.Errorf("vm %s: %w", t.Name, err)
	}
	defer auth.Close()
	user, port, timeout := provisionLogin(p)
	target := provision.Target{
		VM:               t.Name,
		Description:      desc,
		Files:            files,
		Policy:           policy,
		Lookup:           guestLookup(x.Client, r, cfg, conn, t.Node, t.VMID),
		User:             provision.ResolveUser(user, conn.SSHUser, nil),
		Port:             port,
		Auth:             auth,
		AcceptNewHostKey: t.New,
	}
	// The change is provisioning now, whatever its action: reaching the
	// guest, then each file.
	x.Phase(engine.Phase{Name: "provisioning", Detail: "reaching the guest"})
	defer x.Phase(engine.Phase{})
	opts := provision.Options{
		Timeout:     timeout,
		Secrets:     provisionSecrets(r, conn),
		FileStarted: func(name string) { x.Phase(engine.Phase{Name: "provisioning", Detail: name}) },
		// The hooks prefix the resource already.
		Progress:        func(msg string) { x.Msg("%s", strings.TrimPrefix(msg, "vm "+t.Name+": ")) },
		Output:          func(line string) { x.Msg("| %s", line) },
		SaveDescription: descriptionSaver(x, t, digest),
	}
	res, err := provision.Run(ctx, target, opts)
	ran := make([]string, 0, len(res.Ran))
	for _, s := range res.Ran {
		ran = append(ran, s.File.Name)
	}
	return ran, err
}

// provisionLogin is the spec's SSH user and port (""/0: provision's
// defaults) and provisionTimeout (0: the default).
func provisionLogin(p *spec.ProvisionKeys) (user string, port int, timeout time.Duration) {
	if p.SSHUser != nil {
		user = *p.SSHUser
	}
	if p.SSHPort != nil {
		port = *p.SSHPort
	}
	if p.ProvisionTimeout != nil {
		timeout, _ = time.ParseDuration(strings.TrimSpace(*p.ProvisionTimeout)) // validated at load
	}
	return user, port, timeout
}

// descriptionSaver writes the guest's description for provision.Run
// (Options.SaveDescription), starting from the config of digest.
//
// Each write carries the digest of the config it follows, so a
// description (or any key) edited by someone else meanwhile is never
// overwritten: PVE refuses the write (assert_if_modified in PVE/Tools.pm)
// and the file's hash stays unrecorded.
func descriptionSaver(x *engine.Execution, t provisionTarget, digest string) func(ctx context.Context, d string) error {
	return func(ctx context.Context, d string) error {
		params := url.Values{"description": {d}}
		if digest != "" {
			params.Set("digest", digest)
		}
		if err := x.Client.UpdateQemu(ctx, t.Node, t.VMID, params); err != nil {
			if pve.IsDigestMismatch(err) {
				return fmt.Errorf("QemuVM/%s changed while it was being provisioned (digest); its hash is not recorded: run apply again", t.Name)
			}
			return err
		}
		now, err := x.Client.GuestConfig(ctx, pve.QEMU, t.Node, t.VMID)
		if err != nil {
			return fmt.Errorf("read vm %d after writing its description: %w", t.VMID, err)
		}
		digest = now.Get("digest")
		return nil
	}
}

// provisionSecrets are the values no provisioning tool's environment may
// hold under any name: the connection's token secret and key, the
// resource's own key and its secret parameters (cipassword, …), and the
// values of the keys it declares secret (secretKeys).
func provisionSecrets(r *spec.Resource, conn *spec.Connection) []string {
	out := []string{conn.TokenSecret, conn.SSHPrivateKey}
	if p := spec.Provisioning(r); p != nil && p.SSHPrivateKey != nil {
		out = append(out, *p.SSHPrivateKey)
	}
	for k, v := range r.Params.All() {
		if secret.Key(k) {
			out = append(out, v)
		}
	}
	return out
}

// guestLookup says where the guest's address comes from: the static
// address of its ipconfig0 (the spec's ip, or what the plan derived),
// else DNS as the connection (may be nil) says, else the guest agent when
// the VM has one. Against a PVE on a loopback address (pvectl sim) the
// agent's loopback leases are accepted: in the simulator loopback is all
// there is. Provisioning and `pvectl ssh repin` (GuestLookup) share it.
func guestLookup(cl *pve.Client, r *spec.Resource, cfg *pve.Config, conn *spec.Connection, node string, vmid int) provision.Lookup {
	var l provision.Lookup
	if conn != nil {
		l.DNSDomain, l.DNSServers = conn.DNSDomain, conn.DNSServers
	}
	if ip := staticIP(cfg.Get("ipconfig0")); ip != "" {
		l.IP = ip
	} else if g := spec.Guest(r); g.IP != nil && !strings.EqualFold(*g.IP, "dhcp") {
		l.IP = *g.IP
	}
	if agentEnabled(cfg.Get("agent")) {
		l.Agent = func(ctx context.Context) ([]provision.AgentInterface, error) {
			data, err := cl.AgentNetworkInterfaces(ctx, node, vmid)
			if err != nil {
				return nil, err
			}
			return provision.ParseAgentInterfaces(data)
		}
		l.AllowLoopback = loopbackAPI(cl)
	}
	return l
}

// staticIP is the address of an ipconfig0 "ip=A.B.C.D/NN,gw=…" ("" for
// dhcp or none).
func staticIP(ipconfig string) string {
	for _, part := range strings.Split(ipconfig, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "ip="); ok {
			if pfx, err := netip.ParsePrefix(v); err == nil {
				return pfx.Addr().String()
			}
			if a, err := netip.ParseAddr(v); err == nil {
				return a.String()
			}
		}
	}
	return ""
}

// agentEnabled reads a VM's agent property string ("1", "enabled=1,…").
func agentEnabled(agent string) bool {
	for _, part := range strings.Split(agent, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return k == "1"
		}
		if k == "enabled" {
			return v == "1"
		}
	}
	return false
}

// loopbackAPI: the client talks to a PVE on a loopback address.
func loopbackAPI(cl *pve.Client) bool {
	if cl == nil {
		return false
	}
	u, err := url.Parse(cl.BaseURL())
	if err != nil {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// noteMissingKey adds to c, when it provisions, a notice that no SSH key
// is to be had here (the resource's or connection's sshPrivateKey,
// PROXMOX_SSH_PRIVATE_KEY, an ssh-agent): apply would fail at this step
// after the approval. A notice, not an error: a plan-only CI job may
// hold the token but not the key. Reading the key touches no network.
func noteMissingKey(b *engine.Builder, r *spec.Resource, c *engine.Change) {
	if len(c.Provision) == 0 {
		return
	}
	connKey := ""
	if lc := b.Obs.Conns[r.Connection]; lc != nil && lc.Settings != nil {
		connKey = lc.Settings.SSHPrivateKey
	}
	key := provisionKey(r, connKey)
	// One look per key: many VMs share the connection's key.
	msg, seen := b.KeyProblems[key]
	if !seen {
		if auth, err := provision.LoadAuth(key, nil); err != nil {
			// Reasons go into saved plans, which no scrubber reads: a key
			// that is neither PEM nor a readable path (say, base64 of a
			// PEM) would be named as the path it was taken for.
			env := os.Getenv(provision.EnvPrivateKey)
			msg = secret.Scrub(err.Error(), []string{key, strings.TrimSpace(key), env, strings.TrimSpace(env)})
		} else {
			auth.Close()
		}
		if b.KeyProblems == nil {
			b.KeyProblems = map[string]string{}
		}
		b.KeyProblems[key] = msg
	}
	if msg != "" {
		c.Reasons = append(c.Reasons, "warning: provisioning will fail here: "+msg)
	}
}

// GuestLookup is where provisioning finds guest r's address (VM vmid on
// node, its config cfg, through connection conn, which may be nil): the
// static ip of its ipconfig0 or spec, else its DNS record as the
// connection says, else the guest agent's lease. `pvectl ssh repin` asks
// the same way.
func GuestLookup(cl *pve.Client, r *spec.Resource, cfg *pve.Config, conn *spec.Connection, node string, vmid int) provision.Lookup {
	return guestLookup(cl, r, cfg, conn, node, vmid)
}
