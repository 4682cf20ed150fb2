package spec

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// The reference provider's VM conveniences (design §3): pvectl keys that
// Load turns into the PVE keys they stand for, so that the plan compares,
// shows and passes on PVE's own values, and the implicit dependencies
// (net0's bridge) follow from them like from written keys.

// DefaultVLANBridge is the bridge a `vlan` tags when the spec names none.
const DefaultVLANBridge = "vmbr1"

// cloneRefused are create parameters the clone call has no counterpart
// for: a VM made from an image cannot take them.
var cloneRefused = map[string]string{
	"archive":                "a clone is not a restore",
	"live-restore":           "a clone is not a restore",
	"unique":                 "it belongs to restores",
	"force":                  "it belongs to restores",
	"import-working-storage": "it belongs to imports",
	"start":                  "write running: false to keep a clone stopped (it is started by default)",
	"ha-managed":             "the clone call does not take it",
}

// qemuConveniences checks the QEMU keys of GuestKeys and writes the PVE
// keys they stand for into r.Params (each placed at the key it came from):
// ip/gateway → ipconfig0, vlan/bridge → net0's bridge and tag, sshKeys →
// sshkeys, and machine q35 for a clone that names none.
func qemuConveniences(r *Resource) []problem {
	g := Guest(r)
	var out []problem
	bad := func(key, format string, args ...any) { out = append(out, problem{key, fmt.Sprintf(format, args...)}) }
	derive := func(param, from, value string) {
		r.Params.Set(param, value)
		if pos, ok := r.KeyPos.Get(from); ok {
			r.KeyPos.Set(param, pos)
		}
	}
	// `key: null` beside the convenience drops a default of the PVE key
	// (a Defaults ipconfig0 under a resource's ip): the convenience wins.
	dropNull := func(key string) {
		r.Remove = slices.DeleteFunc(r.Remove, func(k string) bool { return k == key })
	}

	if g.IP != nil || g.Gateway != nil {
		if g.IP != nil {
			dropNull("ipconfig0")
		}
		if _, set := r.Params.Lookup("ipconfig0"); set {
			key := "ip"
			if g.IP == nil {
				key = "gateway"
			}
			bad(key, "spec.%s and spec.ipconfig0 both set the first NIC's address: write one of them", key)
		} else if g.IP != nil {
			if v, err := IPConfig(*g.IP, deref(g.Gateway)); err != nil {
				bad("ip", "spec.ip: %v", err)
			} else {
				derive("ipconfig0", "ip", v)
			}
		} else if _, err := gatewayAddr(*g.Gateway); err != nil {
			bad("gateway", "spec.gateway: %v", err)
		}
	}
	if g.VLAN != nil || g.Bridge != nil {
		if v, key, err := netWithVLAN(r.Params.Get("net0"), g); err != nil {
			bad(key, "%v", err)
		} else {
			from := "vlan"
			if g.VLAN == nil {
				from = "bridge"
			}
			derive("net0", from, v)
		}
	}
	if g.SSHKeys != nil {
		dropNull("sshkeys")
		if _, set := r.Params.Lookup("sshkeys"); set {
			bad("sshKeys", "spec.sshKeys and spec.sshkeys both set cloud-init's keys: write one of them (a resource's sshKeys: null drops the Defaults' list)")
		} else if v, err := SSHKeysParam(g.SSHKeys); err != nil {
			bad("sshKeys", "spec.sshKeys: %v", err)
		} else {
			derive("sshkeys", "sshKeys", v)
		}
	}
	if g.Replace != nil {
		switch old := strings.TrimSpace(*g.Replace); {
		case old == "":
			bad("replace", "spec.replace must name an existing VM (its name or vmid)")
		case old == r.Params.Get("name") || old == r.Params.Get("vmid"):
			bad("replace", "spec.replace names this VM itself (%s): name the VM it replaces", old)
		}
	}
	if r.Params.Get("template") == "1" {
		if g.Running != nil && *g.Running {
			bad("running", "a template cannot run (template: 1): drop running: true")
		}
		if r.Params.Get("start") == "1" {
			bad("start", "a template cannot run (template: 1): drop start")
		}
	}
	out = append(out, cloneKeys(r, g, derive)...)
	return out
}

// WrittenAs maps the PVE keys of a QemuVM whose whole value its
// conveniences wrote to the key the user wrote instead: ipconfig0 → ip,
// and net0 → vlan (or bridge) when no net0 of the user's went into it.
// A create's diff shows the user's key, not both. sshkeys is not in it:
// the sshKeys list is not a diff line of its own.
func WrittenAs(r *Resource) map[string]string {
	out := map[string]string{}
	g := Guest(r) // empty for other kinds: only a QemuVM takes ip and vlan
	if g.IP != nil && r.Params.Get("ipconfig0") != "" {
		out["ipconfig0"] = "ip"
	}
	if g.VLAN != nil || g.Bridge != nil {
		if v, _, err := netWithVLAN("", g); err == nil && v == r.Params.Get("net0") {
			out["net0"] = "vlan"
			if g.VLAN == nil {
				out["net0"] = "bridge"
			}
		}
	}
	return out
}

// ShownAs maps the paths of a QemuVM's diff (a PVE key or key.sub-key)
// that its conveniences wrote to the convenience the user wrote, for the
// plan text: an update's ipconfig0.ip reads as ip, net0.tag as vlan,
// sshkeys as sshKeys. A key the user wrote as PVE's own is not in it (so
// it is shown as written); nor is an address pvectl settled from DNS
// (ipconfig0.ip without ip). The gateway sub-key reads as gateway when
// ip or gateway was written: ip implies its gateway (IPConfig).
func ShownAs(r *Resource) map[string]string {
	out := WrittenAs(r)
	g := Guest(r)
	if g.IP != nil && r.Params.Get("ipconfig0") != "" {
		out["ipconfig0.ip"] = "ip"
	}
	if g.Gateway != nil || out["ipconfig0"] != "" {
		out["ipconfig0.gw"] = "gateway"
	}
	if g.VLAN != nil {
		out["net0.tag"] = "vlan"
	}
	if g.Bridge != nil || out["net0"] != "" {
		// A vlan without bridge or net0 tags the default bridge: the
		// bridge key is where the user changes it.
		out["net0.bridge"] = "bridge"
	}
	if g.SSHKeys != nil && r.Params.Get("sshkeys") != "" {
		out["sshkeys"] = "sshKeys"
	}
	return out
}

// cloneKeys checks what goes with image (and full), and makes q35 the
// machine of a clone that names none (design §3).
func cloneKeys(r *Resource, g *GuestKeys, derive func(param, from, value string)) []problem {
	var out []problem
	if !g.Clones() {
		if g.Full != nil {
			out = append(out, problem{"full", "spec.full applies to clones: set image or fromTemplate too, or drop full"})
		}
		return out
	}
	src := "image"
	switch {
	case g.Image != nil && g.FromTemplate != nil:
		out = append(out, problem{"fromTemplate", "spec.image and spec.fromTemplate both say what the VM is cloned from: write one of them"})
	case g.Image != nil:
		if strings.TrimSpace(*g.Image) == "" {
			out = append(out, problem{"image", "spec.image must name a template: its VMID or a part of its name"})
		}
	case g.FromTemplate != nil:
		src = "fromTemplate"
		if strings.TrimSpace(*g.FromTemplate) == "" {
			out = append(out, problem{"fromTemplate", "spec.fromTemplate must name a Template of these specs"})
		}
	case g.BaseImage != nil:
		src = "baseImage"
		if strings.TrimSpace(*g.BaseImage) == "" {
			out = append(out, problem{"baseImage", "spec.baseImage must name a PVE template: its VMID or a part of its name"})
		}
	}
	for _, key := range slices.Sorted(maps.Keys(cloneRefused)) {
		if _, set := r.Params.Lookup(key); set {
			out = append(out, problem{key, fmt.Sprintf("spec.%s cannot go with %s (a clone): %s", key, src, cloneRefused[key])})
		}
	}
	if g.Full != nil && !*g.Full {
		if _, set := r.Params.Lookup("storage"); set {
			// qemu-server API2/Qemu.pm clone_vm: "parameter 'storage' not
			// allowed for linked clones".
			out = append(out, problem{"storage", "PVE refuses storage for a linked clone (full: false): drop storage, or make a full clone"})
		}
	}
	if _, set := r.Params.Lookup("machine"); !set && !slices.Contains(r.Remove, "machine") {
		derive("machine", src, "q35")
	}
	return out
}

// IPConfig is the ipconfig0 value for a static address (A.B.C.D, /24 unless
// a prefix is given) and gateway ("": the first three octets and .1), or
// "ip=dhcp" for dhcp.
func IPConfig(ip, gateway string) (string, error) {
	ip = strings.TrimSpace(ip)
	if strings.EqualFold(ip, "dhcp") {
		if gateway != "" {
			return "", fmt.Errorf("a gateway cannot go with ip: dhcp (DHCP hands out the gateway)")
		}
		return "ip=dhcp", nil
	}
	addr, bits := ip, 24
	if a, b, ok := strings.Cut(ip, "/"); ok {
		n, err := strconv.Atoi(b)
		if err != nil || n < 1 || n > 32 {
			return "", fmt.Errorf("%q: the prefix length must be 1-32", ip)
		}
		addr, bits = a, n
	}
	a, err := netip.ParseAddr(addr)
	if err != nil || !a.Is4() {
		return "", fmt.Errorf("%q is not an IPv4 address (A.B.C.D or A.B.C.D/NN, or dhcp)", ip)
	}
	gw := DefaultGateway(a)
	if gateway != "" {
		if gw, err = gatewayAddr(gateway); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("ip=%s/%d,gw=%s", a, bits, gw), nil
}

// DefaultGateway is the reference provider's gateway for a: its first
// three octets and .1.
func DefaultGateway(a netip.Addr) netip.Addr {
	b := a.As4()
	b[3] = 1
	return netip.AddrFrom4(b)
}

func gatewayAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil || !a.Is4() {
		return netip.Addr{}, fmt.Errorf("gateway %q is not an IPv4 address", s)
	}
	return a, nil
}

// netWithVLAN sets the bridge and VLAN tag of net0 (as written, or a new
// virtio NIC; a clone keeps its template's NIC model and MAC, so only
// the sub-keys are written there). It refuses a net0 that says otherwise.
func netWithVLAN(net0 string, g *GuestKeys) (string, string, error) {
	var items []schema.KV
	if net0 != "" {
		var err error
		if items, err = schema.SplitPropertyString(net0); err != nil {
			return "", "net0", fmt.Errorf("spec.net0: %v", err)
		}
	} else if !g.Clones() {
		items = []schema.KV{{Key: "", Value: "virtio"}}
	}
	bridge := deref(g.Bridge)
	if bridge == "" {
		if b, ok := schema.PropValue(items, "bridge"); ok {
			bridge = b
		} else {
			bridge = DefaultVLANBridge
		}
	}
	if b, ok := schema.PropValue(items, "bridge"); ok && b != bridge {
		return "", "bridge", fmt.Errorf("spec.bridge %s and spec.net0's bridge=%s differ: write one of them", bridge, b)
	}
	items = schema.SetProp(items, "bridge", bridge)
	if g.VLAN != nil {
		if *g.VLAN < 1 || *g.VLAN > 4094 {
			return "", "vlan", fmt.Errorf("spec.vlan must be a VLAN tag (1-4094), got %d", *g.VLAN)
		}
		tag := strconv.Itoa(*g.VLAN)
		if t, ok := schema.PropValue(items, "tag"); ok && t != tag {
			return "", "vlan", fmt.Errorf("spec.vlan %s and spec.net0's tag=%s differ: write one of them", tag, t)
		}
		items = schema.SetProp(items, "tag", tag)
	}
	return schema.FormatPropertyString(items, nil), "", nil
}

// SSHKeysParam renders public keys as cloud-init's sshkeys: one key per
// line, URL-encoded as PVE requires (qemu-server uri_unescapes it and
// checks each line with ssh-keygen: PVE::Tools validate_ssh_public_keys).
func SSHKeysParam(keys []string) (string, error) {
	var lines []string
	for i, k := range keys {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		if strings.ContainsAny(k, "\r\n") {
			return "", fmt.Errorf("item %d holds several lines: write each key as its own item", i+1)
		}
		if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k)); err != nil {
			return "", fmt.Errorf("item %d is not an OpenSSH public key (TYPE BASE64 [COMMENT], as in id_ed25519.pub); PVE's ssh-keygen check would refuse it", i+1)
		}
		lines = append(lines, k)
	}
	if len(lines) == 0 {
		return "", fmt.Errorf("no keys: write at least one, or drop sshKeys")
	}
	return URIEscape(strings.Join(lines, "\n")), nil
}

// URIEscape percent-encodes every byte but A-Z a-z 0-9 - _ . ~, as Perl's
// URI::Escape uri_escape (and the PVE GUI's encodeURIComponent, but for
// its !*'() ) do: the form PVE's urlencoded format accepts.
func URIEscape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
