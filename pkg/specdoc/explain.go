package specdoc

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// ExplainOptions tune Explain.
type ExplainOptions struct {
	// Descriptions are PVE's texts (nil: Explain says where to get them).
	Descriptions *schema.Descriptions
}

// NotFoundError is a path Explain does not know, with the closest name it
// knows ("" when none is close).
type NotFoundError struct {
	What, Suggestion string
	// Planned is set for a kind or key of the design that this version
	// does not implement yet.
	Planned bool
}

func (e *NotFoundError) Error() string {
	switch {
	case e.Planned:
		return e.What + " is not supported yet by this pvectl"
	case e.Suggestion != "":
		return fmt.Sprintf("%s — did you mean %q?", e.What, e.Suggestion)
	}
	return e.What
}

// Explain writes the reference of a kind ("QemuVM"), one of its spec
// fields ("QemuVM.net0") or a sub-key of a property string
// ("QemuVM.net0.tag"): type, default, enum or range, PVE's description,
// and what changing it does to an existing object. "QemuVM.spec.net0"
// works too, and "Defaults.QemuVM.memory" explains QemuVM's memory.
func Explain(w io.Writer, path string, opts ExplainOptions) error {
	parts := strings.Split(path, ".")
	ks, err := findKind(parts[0])
	if err != nil {
		return err
	}
	rest := parts[1:]
	if len(rest) > 0 && rest[0] == "spec" {
		rest = rest[1:]
	}
	if ks.Defaults && len(rest) > 0 {
		return Explain(w, strings.Join(rest, "."), opts)
	}
	x := &explainer{w: w, k: ks, d: opts.Descriptions}
	switch len(rest) {
	case 0:
		x.kind()
		return nil
	case 1, 2:
		return x.field(rest)
	}
	return &NotFoundError{What: fmt.Sprintf("%s: a path is KIND, KIND.FIELD or KIND.FIELD.SUBKEY", path)}
}

func findKind(name string) (*spec.KindSpec, error) {
	for _, k := range spec.KindSpecs() {
		if strings.EqualFold(k.Kind, name) {
			return k, nil
		}
	}
	for _, k := range spec.PlannedKinds() {
		if strings.EqualFold(k, name) {
			return nil, &NotFoundError{What: "kind " + k, Planned: true}
		}
	}
	all := append(spec.SupportedKinds(), spec.PlannedKinds()...)
	return nil, &NotFoundError{What: fmt.Sprintf("unknown kind %q (kinds: %s)", name, strings.Join(spec.SupportedKinds(), ", ")),
		Suggestion: spec.Suggest(name, all)}
}

type explainer struct {
	w io.Writer
	k *spec.KindSpec
	d *schema.Descriptions
}

func (x *explainer) printf(format string, args ...any) { fmt.Fprintf(x.w, format, args...) }

// row prints a labelled line; empty values are left out.
func (x *explainer) row(label, value string) {
	if value != "" {
		x.printf("%-12s %s\n", label+":", value)
	}
}

// block prints a heading and indented text.
func (x *explainer) block(heading string, lines ...string) {
	x.printf("\n%s:\n", heading)
	for _, l := range lines {
		for _, s := range strings.Split(strings.TrimRight(l, "\n"), "\n") {
			x.printf("  %s\n", s)
		}
	}
}

func (x *explainer) noun() string {
	if x.k.Noun != "" {
		return x.k.Noun
	}
	return "object"
}

func (x *explainer) kind() {
	k := x.k
	x.row("KIND", k.Kind)
	if k.Create != nil {
		x.row("CREATE", k.Create.String())
	}
	if why, ok := planner.Rebuilt(k.Kind); ok {
		x.row("UPDATE", "none: "+why)
	} else if k.Update != nil {
		x.row("UPDATE", k.Update.String())
	}
	if k.CallNote != "" {
		x.row("PATHS", k.CallNote)
	}
	if k.Identity != "" {
		id := k.Identity + " (default: the document's name)"
		if len(k.Unique) > 0 {
			id = strings.Join(k.Unique, ", ") + " when set, else " + id
		}
		x.row("IDENTITY", id)
	}
	var keys []string
	for _, d := range spec.DocumentKeys() {
		if k.Resource || !d.ResourceOnly {
			keys = append(keys, d.Name)
		}
	}
	x.row("DOCUMENT", strings.Join(keys, ", "))
	if k.Defaults {
		var kinds []string
		for _, other := range spec.KindSpecs() {
			if !other.Defaults {
				kinds = append(kinds, other.Kind)
			}
		}
		x.block("SPEC", "A map from a kind to default spec keys of that kind, merged under every resource of", "the kind (a resource's own keys win; identity keys cannot be defaulted).",
			"Kinds: "+strings.Join(kinds, ", "), "Run `pvectl explain KIND` for a kind's keys.")
		return
	}
	if len(k.Params) > 0 {
		var lines []string
		for _, p := range k.Params {
			name := p.Name
			if p.Family != "" {
				name = fmt.Sprintf("%s0…%s%d", p.Family, p.Family, p.Max)
			}
			lines = append(lines, fmt.Sprintf("%-24s %s", name, typeLabel(p)))
		}
		x.block("PVE PARAMETERS (spec keys with PVE's names, checked against PVE's API schema)", lines...)
	}
	if len(k.Own) > 0 {
		var lines []string
		for _, o := range k.Own {
			t := string(o.Type)
			if o.Required {
				t += ", required"
			}
			lines = append(lines, fmt.Sprintf("%-24s %s", o.Name, t))
		}
		x.block("PVECTL KEYS", lines...)
	}
	if outs := spec.KindOutputs(k.Kind); len(outs) > 0 {
		var lines []string
		for _, o := range outs {
			lines = append(lines, fmt.Sprintf("%-24s %s", o.Name, o.Doc))
		}
		lines = append(lines, "Another resource names one as ${"+k.Kind+"/NAME.OUTPUT} in any PVE parameter: a dependency,", "put in once known (shown as known after apply until then).")
		x.block("OUTPUTS", lines...)
	}
	if len(k.Unsupported) > 0 {
		x.block("NOT SUPPORTED YET", strings.Join(k.Unsupported, ", "))
	}
	x.printf("\nRun `pvectl explain %s.FIELD` for one field.\n", k.Kind)
}

func typeLabel(p *spec.ParamSpec) string {
	switch {
	case p.Fixed != "":
		return "always " + p.Fixed
	case p.PropertyString:
		return "property string"
	case p.ListSeparator != "":
		return "list"
	}
	return p.Schema.Type
}

func (x *explainer) field(path []string) error {
	key := path[0]
	if p, ok := x.k.Param(key); ok {
		if len(path) == 2 {
			return x.subKey(p, key, path[1])
		}
		x.param(p, key)
		return nil
	}
	if o, ok := x.k.OwnKey(key); ok && len(path) == 1 {
		x.own(o)
		return nil
	}
	if slices.Contains(x.k.Unsupported, key) {
		return &NotFoundError{What: fmt.Sprintf("%s.%s", x.k.Kind, key), Planned: true}
	}
	for _, d := range spec.DocumentKeys() {
		if d.Name == key && len(path) == 1 && (x.k.Resource || !d.ResourceOnly) {
			x.row("KIND", x.k.Kind)
			x.row("FIELD", key+" (a document key, beside spec)")
			x.block("DESCRIPTION", d.Doc)
			return nil
		}
	}
	return &NotFoundError{What: fmt.Sprintf("%s has no field %q", x.k.Kind, key), Suggestion: spec.Suggest(key, x.k.Candidates(key))}
}

func (x *explainer) param(p *spec.ParamSpec, key string) {
	s := p.Schema
	x.row("KIND", x.k.Kind)
	field := key
	if p.Family != "" {
		field = fmt.Sprintf("%s (one of %s0 … %s%d)", key, p.Family, p.Family, p.Max)
	}
	x.row("FIELD", field)
	switch {
	case p.Fixed != "":
		x.row("TYPE", fmt.Sprintf("%s, always %q for a %s", s.Type, p.Fixed, x.k.Kind))
	case p.PropertyString:
		x.row("TYPE", "property string: a string, or a map of its sub-keys")
		x.row("FORMAT", s.TypeText)
		subs := p.SubKeys()
		var names, keyAliases, aliases []string
		for _, n := range slices.Sorted(maps.Keys(subs)) {
			switch sub := subs[n]; {
			case sub.Alias != "" && sub.KeyAlias != "":
				keyAliases = append(keyAliases, n)
			case sub.Alias != "":
				aliases = append(aliases, fmt.Sprintf("%s (for %s)", n, sub.Alias))
			default:
				names = append(names, n)
			}
		}
		x.row("SUB-KEYS", strings.Join(names, ", "))
		x.row("ALIASES", strings.Join(aliases, ", "))
		if len(keyAliases) > 0 {
			first := subs[keyAliases[0]]
			x.row("SHORTHANDS", fmt.Sprintf("%s (%s=VALUE is %s=%s,%s=VALUE)", strings.Join(keyAliases, ", "),
				keyAliases[0], first.KeyAlias, keyAliases[0], first.Alias))
		}
	case p.ListSeparator != "":
		x.row("TYPE", fmt.Sprintf("list: a YAML list, or one string of items separated by %q", p.ListSeparator))
	default:
		x.row("TYPE", typeName(s))
	}
	x.facts(s, !p.PropertyString)
	for _, a := range slices.Sorted(maps.Keys(p.ValueAliases)) {
		x.row("ALIAS", fmt.Sprintf("%s is written as %s", a, p.ValueAliases[a]))
	}
	if p.Secret {
		x.row("SECRET", "yes: never shown in plans, output or logs")
	}
	x.row("PVE", "parameter of "+x.k.Create.String())
	x.description(x.d.Param(x.k.Create.Method, x.k.Create.Path, p.Name))
	if e := x.changes(key, ""); p.Removable && e == planner.InPlace {
		x.printf("  `%s: null` removes it from the %s.\n", key, x.noun())
	}
}

func (x *explainer) subKey(p *spec.ParamSpec, key, sub string) error {
	subs := p.SubKeys()
	if subs == nil {
		return &NotFoundError{What: fmt.Sprintf("%s.%s is not a property string: it has no sub-keys", x.k.Kind, key)}
	}
	s, ok := subs[sub]
	if !ok {
		var names []string
		for _, n := range slices.Sorted(maps.Keys(subs)) {
			if subs[n].Alias == "" {
				names = append(names, n)
			}
		}
		return &NotFoundError{What: fmt.Sprintf("%s.%s has no sub-key %q (sub-keys: %s)", x.k.Kind, key, sub, strings.Join(names, ", ")),
			Suggestion: spec.Suggest(sub, slices.Collect(maps.Keys(subs)))}
	}
	x.row("KIND", x.k.Kind)
	field := key + "." + sub
	if p.Family != "" {
		field = fmt.Sprintf("%s (in %s0 … %s%d)", field, p.Family, p.Family, p.Max)
	}
	x.row("FIELD", field)
	if s.Alias != "" {
		x.row("SHORTHAND", fmt.Sprintf("%s=VALUE is %s=%s,%s=VALUE", sub, s.KeyAlias, sub, s.Alias))
		if target := subs[s.Alias]; target != nil {
			s = target
		}
	}
	x.row("TYPE", typeName(s))
	x.facts(s, true)
	switch {
	case s.DefaultKey:
		x.row("REQUIRED", fmt.Sprintf("yes; the default key: written first, \"%s=\" may be left out", sub))
	case !s.Optional:
		x.row("REQUIRED", "yes")
	}
	x.row("PVE", fmt.Sprintf("sub-key of %s, parameter of %s", p.Name, x.k.Create))
	x.description(x.d.SubKey(x.k.Create.Method, x.k.Create.Path, p.Name, sub))
	x.changes(key, sub)
	return nil
}

func (x *explainer) own(o *spec.OwnKeySpec) {
	x.row("KIND", x.k.Kind)
	x.row("FIELD", o.Name+" (a pvectl key)")
	switch o.Type {
	case spec.OwnList:
		x.row("TYPE", "list of strings, or one comma-separated string")
	case spec.OwnString:
		x.row("TYPE", "string")
	default:
		x.row("TYPE", string(o.Type))
	}
	if o.Required {
		x.row("REQUIRED", "yes")
	}
	if o.Secret {
		x.row("SECRET", "yes: never shown in plans, output or logs")
	}
	x.block("DESCRIPTION", o.Doc)
	if x.k.Resource {
		x.changes(o.Name, "")
	}
}

func typeName(s *schema.Param) string {
	switch s.Type {
	case "boolean":
		return "boolean (true or false; PVE's 1 or 0)"
	case "":
		return "string"
	}
	return s.Type
}

// facts prints enum, range, length, pattern, named format and default.
func (x *explainer) facts(s *schema.Param, withFormat bool) {
	if len(s.Enum) > 0 {
		x.row("ENUM", strings.Join(s.Enum, ", "))
	}
	switch {
	case s.Min != nil && s.Max != nil:
		x.row("RANGE", fmt.Sprintf("%s … %s", num(*s.Min), num(*s.Max)))
	case s.Min != nil:
		x.row("RANGE", "at least "+num(*s.Min))
	case s.Max != nil:
		x.row("RANGE", "at most "+num(*s.Max))
	}
	switch {
	case s.MinLength > 0 && s.MaxLength > 0:
		x.row("LENGTH", fmt.Sprintf("%d … %d characters", s.MinLength, s.MaxLength))
	case s.MaxLength > 0:
		x.row("LENGTH", fmt.Sprintf("at most %d characters", s.MaxLength))
	case s.MinLength > 0:
		x.row("LENGTH", fmt.Sprintf("at least %d characters", s.MinLength))
	}
	if s.Pattern != "" {
		x.row("PATTERN", s.Pattern)
	}
	if withFormat && s.Format != "" {
		x.row("FORMAT", s.Format)
	}
	if s.Default != nil {
		d := fmt.Sprint(s.Default)
		if f, ok := s.Default.(float64); ok {
			d = num(f)
			if s.Type == "boolean" {
				d = fmt.Sprint(f != 0)
			}
		}
		x.row("DEFAULT", d)
	}
}

func num(f float64) string { return strings.TrimSuffix(fmt.Sprintf("%f", f), ".000000") }

func (x *explainer) description(text string) {
	if text == "" && x.d.Len() > 0 {
		text = "(PVE's API schema gives none.)"
	}
	if text == "" {
		text = "(PVE's description is not built into pvectl: its API documentation is AGPL text. Give an apidoc with --apidoc FILE or PVECTL_APIDOC — a PVE node has /usr/share/pve-docs/api-viewer/apidoc.js, pveproxy serves it at https://NODE:8006/pve-docs/api-viewer/apidoc.js — or save it as ~/.config/pvectl/apidoc.js.)"
	}
	x.block("DESCRIPTION", text)
}

// changes prints what changing the field of an existing object does, and
// returns the kind of effect (0 when there is none to tell).
func (x *explainer) changes(key, sub string) planner.EffectKind {
	if !x.k.Resource {
		return 0
	}
	e, err := planner.FieldEffect(x.k.Kind, key, sub)
	if err != nil {
		return 0
	}
	noun := x.noun()
	var lines []string
	switch e.Kind {
	case planner.InPlace:
		l := "Updated in place"
		if e.How != "" {
			l += " with " + e.How
		}
		lines = append(lines, l+".")
	case planner.Replaces:
		lines = append(lines, fmt.Sprintf("Replaces the %s: %s.", noun, e.Why))
	case planner.Names:
		lines = append(lines, fmt.Sprintf("Names the %s (%s): a new value is another %s, which is created; the one the old value named is left alone.", noun, e.Why, noun))
	case planner.CreateOnly:
		lines = append(lines, fmt.Sprintf("Used only to create the %s (%s): later changes are not compared and change nothing.", noun, e.Why))
	case planner.Fixed:
		lines = append(lines, fmt.Sprintf("Fixed: %s.", e.Why))
	}
	if e.Note != "" {
		lines = append(lines, sentence(e.Note))
	}
	if r := e.Live; r != nil {
		lines = append(lines, sentence(fmt.Sprintf("On a running %s: %s (%s)", noun, liveText(r, noun), r.Source)))
	}
	x.block("CHANGES", lines...)
	return e.Kind
}

func liveText(r *pve.LiveRule, noun string) string {
	note := ""
	if r.Note != "" {
		note = "; " + r.Note
	}
	switch r.When {
	case pve.LiveNow:
		return "applied at once" + note
	case pve.LiveHotplug:
		return fmt.Sprintf("applied at once when the %s's hotplug option includes %s (PVE's default: network,disk,usb), otherwise it stays pending until the %s restarts%s", noun, r.Feature, noun, note)
	case pve.LiveNewOnly:
		return fmt.Sprintf("a new one is added at once; a change of an existing one stays pending until the %s restarts%s", noun, note)
	}
	return fmt.Sprintf("stays pending until the %s restarts (pvectl says so after the update and does not restart it)%s", noun, note)
}

func sentence(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// ListKinds writes every kind with what it manages (its PVE create call,
// or "pvectl's own" for kinds without one) and the kinds of the design
// this version does not support yet: what `explain` without a path shows.
func ListKinds(w io.Writer) error {
	var b strings.Builder
	b.WriteString("KINDS (pvectl explain KIND for one)\n")
	for _, k := range spec.KindSpecs() {
		what := "pvectl's own"
		if k.Create != nil {
			what = k.Create.String()
		}
		fmt.Fprintf(&b, "  %-16s %s\n", k.Kind, what)
	}
	if planned := spec.PlannedKinds(); len(planned) > 0 {
		fmt.Fprintf(&b, "\nNOT SUPPORTED YET\n  %s\n", strings.Join(planned, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
