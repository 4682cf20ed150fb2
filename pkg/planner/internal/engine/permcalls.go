package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/spec"
)

// One permission model: a kind declares the API calls reading a resource
// and carrying out a change make (method, the apidoc's path template, the
// parameters the rule looks at), and the preflight derives what they need
// from the same rules the simulator enforces — PVE's `permissions` of
// each method, pkg/pve/acl — plus the checks the calls' handlers make,
// declared beside the call with the PVE file that makes them.

// apiCall is one call a read or a change makes.
type APICall struct {
	method string
	// path is the apidoc's template ("/nodes/{node}/dns"); its variables
	// come from params.
	path string
	// params are the call's parameters its rule reads (path variables
	// included), present when listed even if empty.
	Params map[string]string
	// why says what for ("to create the pool"), completing "needed …";
	// privWhy says it for the needs of one privilege where that says more
	// ("to create a user of realm pve").
	Why     string
	privWhy map[string]string
	// pool is the pool a new guest joins: a need on its /vms path is met
	// on /pool/{pool} as well (check_vm_perm, compile_acl_path).
	Pool string
	// handler are the checks the call's handler makes beyond its rule (a
	// list filtered by privilege, a per-option check), each with the PVE
	// file that makes it cited where it is declared.
	Handler []PermNeed
}

// Call is a call whose rule reads params, given as name, value pairs.
func Call(method, path, why string, params ...string) APICall {
	c := APICall{method: method, path: path, Why: why, Params: map[string]string{}}
	for i := 0; i+1 < len(params); i += 2 {
		c.Params[params[i]] = params[i+1]
	}
	return c
}

// Saying says why for the needs of priv.
func (c APICall) Saying(priv, why string) APICall {
	if c.privWhy == nil {
		c.privWhy = map[string]string{}
	}
	c.privWhy[priv] = why
	return c
}

// With adds the checks the call's handler makes.
func (c APICall) With(handler ...PermNeed) APICall {
	c.Handler = append(c.Handler, handler...)
	return c
}

// callDeclarer kinds declare the calls reading r truthfully makes —
// PVE's lists hide what a token may not audit — and the calls carrying
// out c makes (lo is the object as read); the engine derives the
// privileges from them (callNeeds) and checks them against the token's
// permissions before it plans (perms.go).
type CallDeclarer interface {
	ReadCalls(r *spec.Resource) []APICall
	ChangeCalls(c *Change, lo *LiveObj) []APICall
}

// ReadNeeds are what reading r truthfully needs; ok is false when k
// declares nothing.
func ReadNeeds(k KindOps, r *spec.Resource) ([]PermNeed, bool) {
	if p, ok := k.(CallDeclarer); ok {
		return CallNeeds(p.ReadCalls(r)), true
	}
	return nil, false
}

// changeNeeds are what carrying out c needs.
func changeNeeds(k KindOps, c *Change, lo *LiveObj) ([]PermNeed, bool) {
	p, ok := k.(CallDeclarer)
	if !ok {
		return nil, false
	}
	if c.Action == NoOp {
		return nil, true
	}
	return CallNeeds(p.ChangeCalls(c, lo)), true
}

// CallNeeds derives what calls need: each one's rule, then its handler's
// checks; a need two calls share is listed once, with the first one's why.
func CallNeeds(calls []APICall) []PermNeed {
	var out []PermNeed
	seen := map[string]bool{}
	add := func(n PermNeed) {
		key := NeedKey(n)
		if !seen[key] {
			seen[key] = true
			out = append(out, n)
		}
	}
	fromRule := map[string]bool{}
	for _, c := range calls {
		for _, n := range ruleNeeds(c) {
			fromRule[NeedKey(n)] = true
			add(n)
		}
		for _, n := range c.Handler {
			add(n)
		}
	}
	all := slices.Clone(out)
	return slices.DeleteFunc(out, func(n PermNeed) bool { return fromRule[NeedKey(n)] && impliedBy(n, all) })
}

// impliedBy reports whether a rule's any-of need is met by any need of
// needs anyway: another asks one of its privileges on the same path (a
// config write's "any VM.Config.*" beside its settings' VM.Config.Memory).
func impliedBy(n PermNeed, needs []PermNeed) bool {
	if !n.AnyOf || len(n.Alt) > 0 || n.RootOnly {
		return false
	}
	for _, o := range needs {
		if o.RootOnly || o.Path != n.Path || o.Or != n.Or || len(o.Alt) > 0 || (o.AnyOf && len(o.Privs) != 1) || NeedKey(o) == NeedKey(n) {
			continue
		}
		for _, p := range o.Privs {
			if slices.Contains(n.Privs, p) {
				return true
			}
		}
	}
	return false
}

// NeedKey is what n asks for, whatever it is for.
func NeedKey(n PermNeed) string {
	key := fmt.Sprintf("%s|%s|%v|%s|%v|%s", n.Path, strings.Join(n.Privs, ","), n.AnyOf, n.Or, n.RootOnly, n.Hint)
	if n.RootOnly { // each root-only setting is its own refusal
		key += "|" + n.Why
	}
	for _, a := range n.Alt {
		key += "|alt:" + NeedKey(a)
	}
	return key
}

// ruleNeeds are what c's rule checks. A method the apidoc gives no rule
// is root@pam's only; an open one ("user": "all") leaves its checks to
// the handler.
func ruleNeeds(c APICall) []PermNeed {
	if c.method == "" {
		return nil // no call of its own: its handler's checks alone
	}
	rule, known := acl.RuleOf(c.method, c.path)
	if !known || rule == nil || (!rule.Open() && rule.Check == nil) {
		return c.rootOnly()
	}
	if rule.Open() {
		return nil
	}
	t, err := acl.Parse(rule.Check, func(name string) (string, bool) {
		v, ok := c.Params[name]
		if spec.HasOutputRef(v) {
			v = KnownAfterApply
		}
		return v, ok
	})
	if err != nil {
		return c.rootOnly()
	}
	needs, ok := testNeeds(t, c)
	if !ok {
		return c.rootOnly()
	}
	for i, n := range needs {
		if w, ok := c.privWhy[strings.Join(n.Privs, ",")]; ok {
			needs[i].Why = w
		}
		if c.Pool != "" && strings.HasPrefix(n.Path, "/vms") {
			needs[i].Or = "/pool/" + c.Pool
		}
	}
	return needs
}

// rootOnly: no API token may make the call.
func (c APICall) rootOnly() []PermNeed {
	return []PermNeed{{RootOnly: true, Why: strings.TrimPrefix(c.Why, "to ")}}
}

// testNeeds turns one test of a rule into needs; ok is false when no
// API token can pass it.
func testNeeds(t acl.Test, c APICall) ([]PermNeed, bool) {
	switch t.Op {
	case "and":
		var out []PermNeed
		for _, sub := range t.Subs {
			needs, ok := testNeeds(sub, c)
			if !ok {
				return nil, false
			}
			out = append(out, needs...)
		}
		return out, true
	case "or":
		return orNeeds(t, c)
	case "perm":
		if t.Absent || t.Path == "" {
			return nil, false
		}
		return []PermNeed{{Path: unknownTail(t.Path), Privs: t.Privs, AnyOf: t.Any, Why: c.Why}}, true
	case "perm-modify":
		if t.Path == "" {
			return nil, false
		}
		return []PermNeed{NeedAny(t.Path, c.Why, acl.PermModifyPrivs(t.Path)...)}, true
	case "userid-group":
		// The privileges on /access/groups, or on a group of the user:
		// the preflight asks for /access/groups, as a user's groups are
		// not known before it is read (RPCEnvironment.pm, "userid-group").
		return []PermNeed{NeedAny("/access/groups", c.Why, t.Privs...)}, true
	case "userid-param":
		if t.Sub == "self" {
			return nil, false // an API token is never the user it names
		}
		_, realm, _ := strings.Cut(c.Params["userid"], "@")
		return []PermNeed{NeedPriv("/access/realm/"+realm, c.Why, "Realm.AllocateUser")}, true
	}
	return nil, false
}

// knownAfterApply stands in a path for a value a change in the same apply
// produces (a vmid a create allocates: ${QemuVM/app.vmid}).
const KnownAfterApply = "known-after-apply"

// unknownTail cuts a path at a value not known before apply: the need is
// asked on its parent (/vms), from where a grant reaches every guest. A
// parameter the call does not send stays PVE's "-" (template_replace), as
// PVE checks that path.
func unknownTail(path string) string {
	if i := strings.Index(path+"/", "/"+KnownAfterApply+"/"); i >= 0 {
		if i == 0 {
			return "/"
		}
		return path[:i]
	}
	return path
}

// orNeeds: the first alternative a token can pass, with the others as
// alternatives to it. An alternative that needs more than one grant is
// left out (the preflight then asks for one of the others, which is
// enough as well); none that can pass is a call no token may make.
func orNeeds(t acl.Test, c APICall) ([]PermNeed, bool) {
	var alts []PermNeed
	for _, sub := range t.Subs {
		needs, ok := testNeeds(sub, c)
		switch {
		case !ok:
		case len(needs) == 0:
			return nil, true
		case len(needs) == 1 && needs[0].Or == "" && len(needs[0].Alt) == 0:
			alts = append(alts, needs[0])
		}
	}
	if len(alts) == 0 {
		return nil, false
	}
	first := alts[0]
	first.Alt = append(first.Alt, alts[1:]...)
	return []PermNeed{first}, true
}
