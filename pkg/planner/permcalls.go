package planner

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
type apiCall struct {
	method string
	// path is the apidoc's template ("/nodes/{node}/dns"); its variables
	// come from params.
	path string
	// params are the call's parameters its rule reads (path variables
	// included), present when listed even if empty.
	params map[string]string
	// why says what for ("to create the pool"), completing "needed …";
	// privWhy says it for the needs of one privilege where that says more
	// ("to create a user of realm pve").
	why     string
	privWhy map[string]string
	// pool is the pool a new guest joins: a need on its /vms path is met
	// on /pool/{pool} as well (check_vm_perm, compile_acl_path).
	pool string
	// handler are the checks the call's handler makes beyond its rule (a
	// list filtered by privilege, a per-option check), each with the PVE
	// file that makes it cited where it is declared.
	handler []permNeed
}

// call is a call whose rule reads params, given as name, value pairs.
func call(method, path, why string, params ...string) apiCall {
	c := apiCall{method: method, path: path, why: why, params: map[string]string{}}
	for i := 0; i+1 < len(params); i += 2 {
		c.params[params[i]] = params[i+1]
	}
	return c
}

// saying says why for the needs of priv.
func (c apiCall) saying(priv, why string) apiCall {
	if c.privWhy == nil {
		c.privWhy = map[string]string{}
	}
	c.privWhy[priv] = why
	return c
}

// with adds the checks the call's handler makes.
func (c apiCall) with(handler ...permNeed) apiCall {
	c.handler = append(c.handler, handler...)
	return c
}

// callDeclarer kinds declare the calls reading r truthfully makes —
// PVE's lists hide what a token may not audit — and the calls carrying
// out c makes (lo is the object as read); the engine derives the
// privileges from them (callNeeds) and checks them against the token's
// permissions before it plans (perms.go).
type callDeclarer interface {
	readCalls(r *spec.Resource) []apiCall
	changeCalls(c *Change, lo *liveObj) []apiCall
}

// readNeeds are what reading r truthfully needs; ok is false when k
// declares nothing.
func readNeeds(k kindOps, r *spec.Resource) ([]permNeed, bool) {
	if p, ok := k.(callDeclarer); ok {
		return callNeeds(p.readCalls(r)), true
	}
	return nil, false
}

// changeNeeds are what carrying out c needs.
func changeNeeds(k kindOps, c *Change, lo *liveObj) ([]permNeed, bool) {
	p, ok := k.(callDeclarer)
	if !ok {
		return nil, false
	}
	if c.Action == NoOp {
		return nil, true
	}
	return callNeeds(p.changeCalls(c, lo)), true
}

// callNeeds derives what calls need: each one's rule, then its handler's
// checks; a need two calls share is listed once, with the first one's why.
func callNeeds(calls []apiCall) []permNeed {
	var out []permNeed
	seen := map[string]bool{}
	add := func(n permNeed) {
		key := needKey(n)
		if !seen[key] {
			seen[key] = true
			out = append(out, n)
		}
	}
	fromRule := map[string]bool{}
	for _, c := range calls {
		for _, n := range ruleNeeds(c) {
			fromRule[needKey(n)] = true
			add(n)
		}
		for _, n := range c.handler {
			add(n)
		}
	}
	all := slices.Clone(out)
	return slices.DeleteFunc(out, func(n permNeed) bool { return fromRule[needKey(n)] && impliedBy(n, all) })
}

// impliedBy reports whether a rule's any-of need is met by any need of
// needs anyway: another asks one of its privileges on the same path (a
// config write's "any VM.Config.*" beside its settings' VM.Config.Memory).
func impliedBy(n permNeed, needs []permNeed) bool {
	if !n.anyOf || len(n.alt) > 0 || n.rootOnly {
		return false
	}
	for _, o := range needs {
		if o.rootOnly || o.path != n.path || o.or != n.or || len(o.alt) > 0 || (o.anyOf && len(o.privs) != 1) || needKey(o) == needKey(n) {
			continue
		}
		for _, p := range o.privs {
			if slices.Contains(n.privs, p) {
				return true
			}
		}
	}
	return false
}

// needKey is what n asks for, whatever it is for.
func needKey(n permNeed) string {
	key := fmt.Sprintf("%s|%s|%v|%s|%v|%s", n.path, strings.Join(n.privs, ","), n.anyOf, n.or, n.rootOnly, n.hint)
	if n.rootOnly { // each root-only setting is its own refusal
		key += "|" + n.why
	}
	for _, a := range n.alt {
		key += "|alt:" + needKey(a)
	}
	return key
}

// ruleNeeds are what c's rule checks. A method the apidoc gives no rule
// is root@pam's only; an open one ("user": "all") leaves its checks to
// the handler.
func ruleNeeds(c apiCall) []permNeed {
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
		v, ok := c.params[name]
		if spec.HasOutputRef(v) {
			v = knownAfterApply
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
		if w, ok := c.privWhy[strings.Join(n.privs, ",")]; ok {
			needs[i].why = w
		}
		if c.pool != "" && strings.HasPrefix(n.path, "/vms") {
			needs[i].or = "/pool/" + c.pool
		}
	}
	return needs
}

// rootOnly: no API token may make the call.
func (c apiCall) rootOnly() []permNeed {
	return []permNeed{{rootOnly: true, why: strings.TrimPrefix(c.why, "to ")}}
}

// testNeeds turns one test of a rule into needs; ok is false when no
// API token can pass it.
func testNeeds(t acl.Test, c apiCall) ([]permNeed, bool) {
	switch t.Op {
	case "and":
		var out []permNeed
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
		return []permNeed{{path: unknownTail(t.Path), privs: t.Privs, anyOf: t.Any, why: c.why}}, true
	case "perm-modify":
		if t.Path == "" {
			return nil, false
		}
		return []permNeed{needAny(t.Path, c.why, acl.PermModifyPrivs(t.Path)...)}, true
	case "userid-group":
		// The privileges on /access/groups, or on a group of the user:
		// the preflight asks for /access/groups, as a user's groups are
		// not known before it is read (RPCEnvironment.pm, "userid-group").
		return []permNeed{needAny("/access/groups", c.why, t.Privs...)}, true
	case "userid-param":
		if t.Sub == "self" {
			return nil, false // an API token is never the user it names
		}
		_, realm, _ := strings.Cut(c.params["userid"], "@")
		return []permNeed{need("/access/realm/"+realm, c.why, "Realm.AllocateUser")}, true
	}
	return nil, false
}

// knownAfterApply stands in a path for a value a change in the same apply
// produces (a vmid a create allocates: ${QemuVM/app.vmid}).
const knownAfterApply = "known-after-apply"

// unknownTail cuts a path at a value not known before apply: the need is
// asked on its parent (/vms), from where a grant reaches every guest. A
// parameter the call does not send stays PVE's "-" (template_replace), as
// PVE checks that path.
func unknownTail(path string) string {
	if i := strings.Index(path+"/", "/"+knownAfterApply+"/"); i >= 0 {
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
func orNeeds(t acl.Test, c apiCall) ([]permNeed, bool) {
	var alts []permNeed
	for _, sub := range t.Subs {
		needs, ok := testNeeds(sub, c)
		switch {
		case !ok:
		case len(needs) == 0:
			return nil, true
		case len(needs) == 1 && needs[0].or == "" && len(needs[0].alt) == 0:
			alts = append(alts, needs[0])
		}
	}
	if len(alts) == 0 {
		return nil, false
	}
	first := alts[0]
	first.alt = append(first.alt, alts[1:]...)
	return []permNeed{first}, true
}
