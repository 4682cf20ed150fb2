package spec

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/secret"
)

// interpolate expands ${VAR} and ${VAR:-default} in s; "$${" is a literal
// "${". Like the shell, ":-" also applies when VAR is set but empty. Any
// other "$" is kept, so passwords and regexps need no escaping.
func interpolate(s string, getenv func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			b.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			b.WriteByte(s[i])
			i++
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ in %q (write $${ for a literal ${)", s[i:])
		}
		expr := s[i+2 : i+end]
		if _, ok := parseOutputRef(expr); ok {
			// Another resource's output (outputs.go): the planner's.
			b.WriteString(s[i : i+end+1])
			i += end + 1
			continue
		}
		name, def, hasDef := strings.Cut(expr, ":-")
		if !validVarName(name) {
			return "", fmt.Errorf("invalid variable reference ${%s}: a name is letters, digits and _ (write $${ for a literal ${)", expr)
		}
		v, ok := getenv(name)
		switch {
		case hasDef && (!ok || v == ""):
			v = def
		case !ok:
			return "", &unsetVarError{name: name}
		}
		b.WriteString(v)
		i += end + 1
	}
	return b.String(), nil
}

// unsetVarError is a ${VAR} without a default whose variable is not set:
// an error at plan, a placeholder at validate (LoadOptions.DeferUnset).
type unsetVarError struct{ name string }

func (e *unsetVarError) Error() string {
	return fmt.Sprintf("environment variable %s is not set (write ${%s:-default} for a default)", e.name, e.name)
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// interpolateTree expands every scalar value (never a mapping key) of a
// document in place. An unquoted scalar is re-typed after expansion, so
// `running: ${RUN:-true}` is a boolean as if true had been written; a quoted
// one stays a string. Anchored nodes are expanded once: an alias shares them.
func (l *loader) interpolateTree(file string, n *yaml.Node, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			l.interpolateTree(file, c, seen)
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			if k := n.Content[i-1]; k.Kind == yaml.ScalarNode && secret.Key(k.Value) {
				l.secretValue(resolveAlias(n.Content[i]))
			}
			l.interpolateTree(file, n.Content[i], seen)
		}
	case yaml.ScalarNode:
		if n.ShortTag() != "!!str" || !strings.Contains(n.Value, "${") {
			return
		}
		v, err := interpolate(n.Value, l.getenv)
		var unset *unsetVarError
		if errors.As(err, &unset) && l.deferUnset {
			// validate: the reference is well-formed and where a value
			// may be; what it holds is plan's to check.
			l.poisoned[n] = true
			l.unsetVars[unset.name] = true
			return
		}
		if err != nil {
			d := Diagnostic{Pos: nodePos(file, n), Msg: err.Error()}
			if l.secrets[n].secret {
				// A Connection's secret is needed only to connect: plan
				// reports it (Connection.Unresolved), validate does not.
				l.deferred[n] = d
			} else {
				l.diags = append(l.diags, d)
			}
			l.poisoned[n] = true
			return
		}
		n.Value = v
		// An empty expansion is an empty string, not YAML's null (which
		// would mean "remove this key").
		// The decoder stores the resolved tag on every node; TaggedStyle
		// marks an explicit one (!!str), which stays.
		if v != "" && n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle|yaml.TaggedStyle) == 0 {
			n.Tag = ""
			n.Tag = n.ShortTag()
			// A variable's value never means "remove this key": only a
			// null written in the file does.
			if n.Tag == "!!null" {
				n.Tag = "!!str"
			}
		} else {
			n.Tag = "!!str"
		}
	}
}

// secretRef is what the loader notes about the value of a secret key.
type secretRef struct {
	secret bool
	env    string // the variable it is read from when written as exactly ${VAR}
}

var onlyVarRe = lazyre.New(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)

// secretValue notes, before interpolation, that n is the value of a secret
// key and which variable holds it when it is written as exactly ${VAR}:
// a saved plan records that name (never the value) to read the secret
// again at apply time.
func (l *loader) secretValue(n *yaml.Node) {
	if n == nil || n.Kind != yaml.ScalarNode {
		return
	}
	ref := secretRef{secret: true}
	if m := onlyVarRe.FindStringSubmatch(n.Value); m != nil && n.Style&yaml.TaggedStyle == 0 {
		ref.env = m[1]
	}
	l.secrets[n] = ref
}
