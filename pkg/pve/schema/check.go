package schema

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// Messages PVE's JSONSchema uses for parameter-level problems.
const (
	msgNotDefined = "property is not defined in schema and the schema does not allow additional properties"
	msgMissing    = "property is missing and it is not optional"
	msgDuplicate  = "duplicate parameter (not defined as array)"
)

// Check validates a whole request's parameters (path variables merged in)
// the way PVE does: unknown parameters, missing required ones and bad values.
// The result maps parameter name to message, like PVE's 400 "errors"; nil if valid.
func (m *Method) Check(params url.Values, opts CheckOptions) map[string]string {
	errs := map[string]string{}
	for name, vals := range params {
		p, ok := m.Param(name)
		if !ok {
			if !m.AdditionalProperties {
				errs[name] = msgNotDefined
			}
			continue
		}
		if err := p.checkValues(vals, params); err != nil {
			errs[name] = err.Error()
		}
	}
	if !opts.IgnoreRequired {
		for name, p := range m.Params {
			if p.Optional || strings.HasSuffix(name, "[n]") {
				continue
			}
			if _, ok := params[name]; !ok {
				errs[name] = msgMissing
			}
		}
	}
	// pve-common src/PVE/JSONSchema.pm check_object: a parameter that
	// requires another one it is sent without is an error on the other
	// one, after the checks of each parameter (add_error joins two with "\n").
	for name := range params {
		if p, ok := m.Param(name); ok && p.Requires != "" {
			if _, sent := params[p.Requires]; !sent {
				addError(errs, p.Requires, "missing property required by '"+name+"'")
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// addError records msg for key as PVE's add_error does: a second message
// is joined to the first by the two characters \n (the Perl source
// joins with '\n' in single quotes).
func addError(errs map[string]string, key, msg string) {
	if old, ok := errs[key]; ok {
		errs[key] = old + `\n` + msg
		return
	}
	errs[key] = msg
}

// checkValues checks the values sent for one parameter; only arrays repeat.
func (p *Param) checkValues(vals []string, params url.Values) error {
	p = p.variantFor(params)
	if p.Type != "array" {
		if len(vals) > 1 {
			return errors.New(msgDuplicate)
		}
		if len(vals) == 0 {
			return nil
		}
		return p.Check(vals[0])
	}
	for _, v := range vals {
		if err := p.Check(v); err != nil {
			return err
		}
	}
	return nil
}

// variantFor picks the OneOf variant selected by the request's type
// property (an SDN fabric's "protocol"); without one, p is kept and Check
// accepts any variant.
func (p *Param) variantFor(params url.Values) *Param {
	if len(p.OneOf) == 0 || p.TypeProperty == "" {
		return p
	}
	want := params.Get(p.TypeProperty)
	for _, v := range p.OneOf {
		if slices.Contains(v.InstanceTypes, want) {
			return v
		}
	}
	return p
}

// Check validates one wire value (booleans as 0/1, numbers in decimal,
// property strings as "k=v,k=v") against the parameter, including
// property-string sub-keys, enums, ranges, patterns and known named formats.
func (p *Param) Check(value string) error {
	if len(p.OneOf) > 0 {
		var first error
		for _, v := range p.OneOf {
			err := v.Check(value)
			if err == nil {
				return nil
			}
			if first == nil {
				first = err
			}
		}
		return first
	}
	switch p.Type {
	case "boolean":
		// PVE's JSONSchema takes only 1 and 0 for a parameter (its
		// true/yes/on branch is commented out): "onboot=true" is a 400.
		// Keyed property-string sub-values are lenient, see
		// checkPropertyString.
		if value != "1" && value != "0" {
			return typeError(p.Type, value)
		}
		return nil
	case "integer":
		if !integerRE.MatchString(value) {
			return typeError(p.Type, value)
		}
	case "number":
		if !numberRE.MatchString(value) {
			return typeError(p.Type, value)
		}
	case "array":
		// On the wire an array is its items sent one by one.
		if p.Items != nil {
			return p.Items.Check(value)
		}
		return nil
	}
	if p.Pattern != "" {
		if re := compilePattern(p.Pattern); re != nil && !re.MatchString(value) {
			return errors.New("value does not match the regex pattern")
		}
	}
	// pve-common JSONSchema.pm check_type compares Perl's length() of the
	// value, which pve-http-server (AnyEvent.pm decode_urlencoded) has
	// decoded from UTF-8: characters, not bytes (a description's 8 KiB).
	if n := utf8.RuneCountInString(value); p.MaxLength > 0 && n > p.MaxLength {
		return fmt.Errorf("value may only be %d characters long", p.MaxLength)
	}
	if p.MinLength > 0 && utf8.RuneCountInString(value) < p.MinLength {
		return fmt.Errorf("value must be at least %d characters long", p.MinLength)
	}
	if numberRE.MatchString(value) {
		f, _ := strconv.ParseFloat(value, 64)
		if p.Min != nil && f < *p.Min {
			return fmt.Errorf("value must have a minimum value of %s", formatNumber(*p.Min))
		}
		if p.Max != nil && f > *p.Max {
			return fmt.Errorf("value must have a maximum value of %s", formatNumber(*p.Max))
		}
	}
	if len(p.Enum) > 0 && !slices.Contains(p.Enum, value) {
		return fmt.Errorf("value '%s' does not have a value in the enumeration '%s'", value, strings.Join(p.Enum, ", "))
	}
	if err := p.checkFormat(value); err != nil {
		return fmt.Errorf("invalid format - %s", err.Error())
	}
	return nil
}

func (p *Param) checkFormat(value string) error {
	if props := p.SubKeys(); props != nil {
		return checkPropertyString(value, props)
	}
	if p.Format != "" {
		return checkNamedFormat(p.Format, value)
	}
	return nil
}

// SubKeys returns the property-string sub-keys of p: its inline format, or
// the built-in description of a named property-string format such as
// "pve-qm-ipconfig". It is nil for plain values.
func (p *Param) SubKeys() map[string]*Param {
	if p.Props != nil {
		return p.Props
	}
	if f, ok := propertyFormats[p.Format]; ok {
		return f
	}
	return nil
}

func checkPropertyString(value string, props map[string]*Param) error {
	items, err := parseItems(value, props)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, it := range items {
		sub := props[it.Key]
		if sub == nil || sub.Alias != "" {
			return fmt.Errorf("property '%s' is not defined", it.Key)
		}
		seen[it.Key] = true
		v := it.Value
		if sub.Type == "boolean" && !it.bare {
			// parse_property_string runs parse_boolean on keyed boolean
			// sub-values (discard=on, ssd=true), not on a bare default value.
			if b, ok := ParseBool(v); ok {
				v = map[bool]string{true: "1", false: "0"}[b]
			}
		}
		if err := sub.Check(v); err != nil {
			return fmt.Errorf("%s: %s", it.Key, err.Error())
		}
	}
	// The first missing sub-key by name, found without sorting the keys
	// (this runs for every property string of every spec).
	missing := ""
	for k, sub := range props {
		if !sub.Optional && sub.Alias == "" && !seen[k] && (missing == "" || k < missing) {
			missing = k
		}
	}
	if missing != "" {
		return fmt.Errorf("%s: %s", missing, msgMissing)
	}
	// Then what a sub-key requires beside it (check_object, as for a
	// request's parameters: cluster options' crs ha-auto-rebalance-*
	// need ha-auto-rebalance).
	for _, it := range items {
		if req := props[it.Key].Requires; req != "" && !seen[req] {
			return fmt.Errorf("%s: missing property required by '%s'", req, it.Key)
		}
	}
	return nil
}

func typeError(typ, value string) error {
	return fmt.Errorf("type check ('%s') failed - got '%s'", typ, value)
}

var (
	integerRE = lazyre.New(`^[+-]?\d+$`)
	numberRE  = lazyre.New(`^[+-]?(\d+\.\d*|\d*\.\d+|\d+)([eE][+-]?\d+)?$`)
)

// ParseBool reads a boolean the way PVE does (1/0, true/false, yes/no, on/off).
func ParseBool(s string) (value, ok bool) {
	switch strings.ToLower(s) {
	case "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// Regexp is the parameter's pattern as an anchored RE2 expression, PVE's
// Perl-isms translated; "" when it has none or RE2 cannot express it.
func (p *Param) Regexp() string {
	if p.Pattern == "" {
		return ""
	}
	if re := compilePattern(p.Pattern); re != nil {
		return re.String()
	}
	return ""
}

// patternCache memoises compiled schema patterns; nil marks a pattern RE2
// cannot express, which is then skipped rather than failing every value.
var patternCache sync.Map // string -> *regexp.Regexp

func compilePattern(pat string) *regexp.Regexp {
	if re, ok := patternCache.Load(pat); ok {
		return re.(*regexp.Regexp)
	}
	re, err := regexp.Compile(`^(?:` + translatePattern(pat) + `)$`)
	if err != nil {
		re = nil
	}
	patternCache.Store(pat, re)
	return re
}

var (
	perlFlagsRE   = lazyre.New(`\(\?\^([a-z]*):`)
	openRepeatRE  = lazyre.New(`\{,(\d+)\}`)
	bigRepeatRE   = lazyre.New(`\{\d+,\d+\}`)
	nulEscapeRE   = lazyre.New(`\\0([^0-7]|$)`)
	perlAnchorsRE = lazyre.New(`\\[zZA]`)
)

// translatePattern rewrites the Perl-isms found in PVE's schema into RE2:
// "(?^i:…)" flag groups, "{,n}" and huge repeats, "\0" and \A/\z anchors.
func translatePattern(pat string) string {
	pat = perlFlagsRE.ReplaceAllStringFunc(pat, func(s string) string {
		flags := s[3 : len(s)-1]
		if flags == "" {
			return "(?:"
		}
		return "(?" + flags + ":"
	})
	pat = openRepeatRE.ReplaceAllString(pat, "{0,$1}")
	pat = bigRepeatRE.ReplaceAllStringFunc(pat, func(s string) string {
		// RE2 caps counted repeats at 1000; the length limits beside
		// such patterns (maxLength) still bound the value.
		lo, hi, _ := strings.Cut(s[1:len(s)-1], ",")
		if n, err := strconv.Atoi(hi); err == nil && n > 1000 {
			return "{" + lo + ",}"
		}
		return s
	})
	pat = nulEscapeRE.ReplaceAllString(pat, `\x00$1`)
	pat = perlAnchorsRE.ReplaceAllStringFunc(pat, func(s string) string {
		if s == `\A` {
			return "^"
		}
		return "$"
	})
	return pat
}
