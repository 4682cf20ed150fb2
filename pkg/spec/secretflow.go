package spec

// Secrets as a type (issue 17): a value that came from a secret is secret
// wherever it flows. Before interpolation, noteSecretFlow reads each
// document's `secretKeys:` list and notes which ${VAR}s feed secret keys
// (tokenSecret, sshPrivateKey, password, cipassword, …, and the keys the
// document declares secret) and which feed plain ones. After the build,
// checkSecretFlow refuses a plain key fed by a secret variable or holding
// a secret's value: PVE would store it in clear, show it to anyone who
// may audit the guest, and a saved plan would hold it.

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/pvectl/pvectl/pkg/secret"
)

// SecretKeysKey is the document key that declares spec keys secret.
const SecretKeysKey = "secretKeys"

// minFlowLen is the shortest secret value looked for inside plain values:
// shorter ones ("admin") would match ordinary text by chance.
const minFlowLen = 8

// secretEnvNames are the variables pvectl itself reads secrets from: the
// default connection's token secret and SSH key.
var secretEnvNames = []string{"PROXMOX_TOKEN_SECRET", "PROXMOX_SSH_PRIVATE_KEY"}

// secretFlow is what noteSecretFlow found in every document.
type secretFlow struct {
	docs map[Pos]*flowDoc  // by the document's position (Resource.Pos)
	vars map[string]string // secret variable → why it is secret
	uses []flowUse         // ${VAR}s in plain keys
}

// flowDoc is one document's declarations.
type flowDoc struct {
	keys []string
	pos  Pos               // the secretKeys key
	env  map[string]string // secret spec key → VAR, when written as exactly ${VAR}
}

// flowUse is a plain value that names variables.
type flowUse struct {
	doc  Pos
	pos  Pos
	path string // "spec.description", "name"
	vars []string
}

// noteSecretFlow reads the document m before interpolation: it takes the
// secretKeys list out of it (so the header does not see it) and notes the
// variables of secret and plain values.
func (l *loader) noteSecretFlow(file string, m *yaml.Node) {
	if l.flow == nil {
		l.flow = &secretFlow{docs: map[Pos]*flowDoc{}, vars: map[string]string{}}
	}
	doc := &flowDoc{}
	docPos, kind := nodePos(file, m), ""
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Value == "kind" {
			docPos, kind = nodePos(file, k), resolveAlias(m.Content[i+1]).Value
		}
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == SecretKeysKey {
			doc.pos = nodePos(file, m.Content[i])
			doc.keys = l.secretKeysList(file, kind, m.Content[i+1])
			m.Content = slices.Delete(m.Content, i, i+2)
			break
		}
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], resolveAlias(m.Content[i+1])
		if k.Value != "spec" || v.Kind != yaml.MappingNode {
			l.flowValue(file, docPos, k.Value, v, false, nil)
			continue
		}
		for j := 0; j+1 < len(v.Content); j += 2 {
			sk, sv := v.Content[j], resolveAlias(v.Content[j+1])
			isSecret := secret.Key(sk.Value) || slices.Contains(doc.keys, sk.Value)
			if isSecret {
				if mm := onlyVarRe.FindStringSubmatch(sv.Value); mm != nil && sv.Kind == yaml.ScalarNode {
					if doc.env == nil {
						doc.env = map[string]string{}
					}
					doc.env[sk.Value] = mm[1]
				}
			}
			l.flowValue(file, docPos, "spec."+sk.Value, sv, isSecret, nil)
		}
	}
	if doc.pos != (Pos{}) || doc.env != nil {
		// Most documents declare nothing: no entry (and map) for them.
		l.flow.docs[docPos] = doc
	}
}

// secretKeysList reads a secretKeys value: a list of spec keys (or one).
func (l *loader) secretKeysList(file, kind string, v *yaml.Node) []string {
	v = resolveAlias(v)
	if k := kindOf(kind); k != nil && k.Role != roleResource {
		l.errorf(nodePos(file, v), "%s documents take no %s: it applies to managed resources (declare the key in each document that uses it)", kind, SecretKeysKey)
		return nil
	}
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
	}
	var out []string
	for _, it := range items {
		it = resolveAlias(it)
		if it.Kind != yaml.ScalarNode || it.ShortTag() != "!!str" || it.Value == "" || strings.Contains(it.Value, "${") {
			l.errorf(nodePos(file, it), "%s must list spec keys (e.g. [description]), got %s", SecretKeysKey, describeNode(it))
			continue
		}
		out = append(out, it.Value)
	}
	return out
}

// flowValue walks a value: the variables of a secret one become secret,
// those of a plain one are noted as uses. A mapping key judged secret
// (a nested password) makes its value secret.
func (l *loader) flowValue(file string, doc Pos, path string, n *yaml.Node, isSecret bool, seen map[*yaml.Node]bool) {
	n = resolveAlias(n)
	if n == nil || seen[n] {
		return
	}
	if n.Kind != yaml.ScalarNode {
		// Only a collection can be reached twice (aliases); a scalar
		// needs no map.
		if seen == nil {
			seen = map[*yaml.Node]bool{}
		}
		seen[n] = true
	}
	switch n.Kind {
	case yaml.SequenceNode:
		for _, c := range n.Content {
			l.flowValue(file, doc, path, c, isSecret, seen)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			l.flowValue(file, doc, path+"."+k.Value, n.Content[i+1], isSecret || secret.Key(k.Value), seen)
		}
	case yaml.ScalarNode:
		vars := varsOf(n.Value)
		if len(vars) == 0 {
			return
		}
		if !isSecret {
			l.flow.uses = append(l.flow.uses, flowUse{doc: doc, pos: nodePos(file, n), path: path, vars: vars})
			return
		}
		for _, v := range vars {
			if _, known := l.flow.vars[v]; !known {
				l.flow.vars[v] = fmt.Sprintf("it feeds %s at %s", path, nodePos(file, n))
			}
		}
	}
}

// varsOf names the variables s refers to, as interpolate reads them.
func varsOf(s string) []string {
	if !strings.Contains(s, "${") {
		return nil
	}
	var out []string
	_, _ = interpolate(s, func(name string) (string, bool) {
		out = append(out, name)
		return "x", true
	})
	return out
}

// secretVar says why variable name holds a secret ("" when it does not).
func (f *secretFlow) secretVar(name string) string {
	if why, ok := f.vars[name]; ok {
		return why
	}
	if slices.Contains(secretEnvNames, name) {
		return "pvectl reads the connection's secret from it"
	}
	if secret.Key(name) {
		return "its name says it holds a secret"
	}
	return ""
}

// checkSecretFlow refuses plain keys fed by secrets, and gives each
// resource its declared secret keys and their variables.
func (l *loader) checkSecretFlow(set *Set) {
	f := l.flow
	if f == nil || set == nil {
		return
	}
	reported := map[Pos]bool{}
	for _, u := range f.uses {
		for _, v := range u.vars {
			why := f.secretVar(v)
			if why == "" {
				continue
			}
			fix := "Remove it"
			if strings.HasPrefix(u.path, "spec.") {
				fix += fmt.Sprintf(", or declare the key secret on the document (secretKeys: [%s]) to keep it out of plans and output", topKey(u.path))
			}
			l.errorf(u.pos, "%s uses ${%s}, which holds a secret (%s): a plain key is stored in PVE and in saved plans in clear. %s", u.path, v, why, fix)
			reported[u.doc] = true
			break
		}
	}
	values := l.secretValues(set)
	for _, r := range set.Resources {
		d := f.docs[r.Pos]
		if d != nil {
			if len(d.keys) > 0 {
				r.rare().SecretKeys = d.keys
			}
			if len(d.env) > 0 {
				r.rare().SecretEnv = d.env
			}
			l.checkDeclared(r, d)
		}
		if !reported[r.Pos] { // one message per document is enough
			l.checkValues(r, values)
		}
	}
}

// checkDeclared: every key secretKeys names is set by the document.
func (l *loader) checkDeclared(r *Resource, d *flowDoc) {
	for _, k := range d.keys {
		if !r.KeyPos.Has(k) {
			l.errorf(d.pos, "%s lists %q, which %s's spec does not set", SecretKeysKey, k, r.Address())
		}
	}
}

// checkValues refuses a plain parameter that holds a secret's value,
// however it got there (a copy, another variable holding the same).
func (l *loader) checkValues(r *Resource, values map[string]string) {
	if len(values) == 0 {
		return
	}
	for _, k := range r.Params.Keys() {
		if IsSecretKey(r, k) {
			continue
		}
		for _, sv := range sortedKeys(values) {
			if strings.Contains(r.Params.Get(k), sv) {
				pos, ok := r.KeyPos.Get(k)
				if !ok {
					pos = r.Pos // an identity key defaulted from the name
				}
				l.errorf(pos, "spec.%s holds the value of a secret (%s): a plain key is stored in PVE and in saved plans in clear. "+
					"Remove it, or declare the key secret on the document (secretKeys: [%s])", k, values[sv], k)
				break
			}
		}
	}
}

// secretValues are the secret values the specs and the environment hold
// (long enough to be looked for), each with where it comes from.
func (l *loader) secretValues(set *Set) map[string]string {
	out := map[string]string{}
	add := func(v, why string) {
		if v = strings.TrimSpace(v); len(v) >= minFlowLen {
			if _, ok := out[v]; !ok {
				out[v] = why
			}
		}
	}
	for _, name := range sortedKeys(set.Connections) {
		c := set.Connections[name]
		add(c.TokenSecret, "Connection/"+name+" tokenSecret")
		if keyText(c.SSHPrivateKey) {
			add(c.SSHPrivateKey, "Connection/"+name+" sshPrivateKey")
		}
	}
	for _, r := range set.Resources {
		for k, v := range r.Params.All() {
			if IsSecretKey(r, k) {
				add(v, r.Address()+" "+k)
			}
		}
	}
	names := append(slices.Clone(secretEnvNames), sortedKeys(l.flow.vars)...)
	for _, n := range names {
		if v, ok := l.getenv(n); ok && (n != "PROXMOX_SSH_PRIVATE_KEY" || keyText(v)) {
			add(v, "$"+n)
		}
	}
	return out
}

// IsSecretKey reports whether r's key (a top-level spec key, or a dotted
// path under one) is secret: by its name (secret.Key) or because the
// document declares it (secretKeys).
func IsSecretKey(r *Resource, key string) bool {
	return secret.Key(key) || (r != nil && slices.Contains(r.SecretKeys(), topKey(key)))
}

// SecretValues are the values of every secret key of the set (the
// connections' secrets, secret and declared parameters, secret own
// keys), for the output scrubber.
func SecretValues(set *Set) []string {
	var out []string
	for _, r := range set.Resources {
		for k, v := range r.Params.All() {
			if IsSecretKey(r, k) {
				out = append(out, v)
			}
		}
		for k, v := range r.OwnFields() {
			if s, ok := v.(string); ok && IsSecretKey(r, k) {
				out = append(out, s)
			}
		}
	}
	for _, c := range set.Connections {
		out = append(out, c.TokenSecret, c.SSHPrivateKey)
	}
	return out
}

// keyText: an SSH key setting holds the key itself, not a path to it (a
// path is no secret, and may well appear in a plain key).
func keyText(v string) bool { return strings.Contains(v, "-----BEGIN ") }

func topKey(path string) string {
	path = strings.TrimPrefix(path, "spec.")
	k, _, _ := strings.Cut(path, ".")
	return k
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
