package schema

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ParsePropertyString splits "virtio=BC:..,bridge=vmbr0" into items, resolving
// the default key and key aliases when p describes the format (p may be nil:
// then a bare item gets Key "").
func ParsePropertyString(s string, p *Param) ([]KV, error) {
	var props map[string]*Param
	if p != nil {
		props = p.SubKeys()
	}
	return parsePropertyString(s, props)
}

// SplitPropertyString splits a property string without a schema: keyed
// items keep their key, a bare item ("virtio", "local-lvm:vm-100-disk-0")
// gets Key "". Quoting, escapes, empty items and duplicate keys follow
// ParsePropertyString (and so PVE's parse_property_string).
func SplitPropertyString(s string) ([]KV, error) { return parsePropertyString(s, nil) }

// PropValue returns the value of the first item with key ("" for the bare item).
func PropValue(items []KV, key string) (string, bool) {
	for _, it := range items {
		if it.Key == key {
			return it.Value, true
		}
	}
	return "", false
}

// SetProp returns items with key set to value: replaced where it is,
// appended when absent. items itself is not modified.
func SetProp(items []KV, key, value string) []KV {
	out := slices.Clone(items)
	for i, it := range out {
		if it.Key == key {
			out[i].Value = value
			return out
		}
	}
	return append(out, KV{Key: key, Value: value})
}

// DeleteProp returns items without those with key; items itself is not modified.
func DeleteProp(items []KV, key string) []KV {
	out := make([]KV, 0, len(items))
	for _, it := range items {
		if it.Key != key {
			out = append(out, it)
		}
	}
	return out
}

func parsePropertyString(s string, props map[string]*Param) ([]KV, error) {
	items, err := parseItems(s, props)
	if err != nil {
		return nil, err
	}
	out := make([]KV, len(items))
	for i, it := range items {
		out[i] = it.KV
	}
	return out, nil
}

// item is a parsed property-string item; bare marks a value written
// without its key (the default key), which PVE checks more strictly.
type item struct {
	KV
	bare bool
}

func parseItems(s string, props map[string]*Param) ([]item, error) {
	parts, err := splitPropertyString(s)
	if err != nil {
		return nil, err
	}
	defaultKey := ""
	for k, sub := range props {
		if sub.DefaultKey {
			defaultKey = k
		}
	}
	items := make([]item, 0, len(parts))
	bare := false
	add := func(k, v string) error {
		for _, it := range items { // a handful: no map
			if it.Key == k {
				return fmt.Errorf("duplicate key in comma-separated list property: %s", k)
			}
		}
		items = append(items, item{KV: KV{Key: k, Value: v}, bare: bare})
		return nil
	}
	for _, part := range parts {
		// PVE skips only parts that are all blank; "key=" is an error there
		// (pve-common src/PVE/JSONSchema.pm, parse_property_string).
		if !part.hasKey && strings.TrimSpace(part.text) == "" && !part.quoted {
			continue
		}
		if part.key == "" && !part.hasKey {
			if props != nil && defaultKey == "" {
				return nil, errors.New("value without key, but schema does not define a default key")
			}
			bare = true
			err := add(defaultKey, part.text)
			bare = false
			if err != nil {
				return nil, err
			}
			continue
		}
		if part.key == "" || (part.text == "" && !part.quoted) {
			return nil, errors.New("missing key in comma-separated list property")
		}
		k := part.key
		if sub := props[k]; sub != nil && sub.Alias != "" {
			if sub.KeyAlias != "" {
				if err := add(sub.KeyAlias, k); err != nil {
					return nil, err
				}
			}
			k = sub.Alias
		}
		if err := add(k, part.text); err != nil {
			return nil, err
		}
	}
	return items, nil
}

type rawPart struct {
	key, text      string
	hasKey, quoted bool
}

// splitPropertyString splits on commas outside double quotes. As in PVE, a
// value may be quoted ("a,b") with \" and \\ escapes inside the quotes.
func splitPropertyString(s string) ([]rawPart, error) {
	if strings.IndexByte(s, '"') < 0 {
		// No quotes (nearly every value): the parts are substrings of s,
		// cut at each "," and at the first "=" of each part, as below.
		parts := make([]rawPart, 0, strings.Count(s, ",")+1)
		for part := range strings.SplitSeq(s, ",") {
			var p rawPart
			if k, v, ok := strings.Cut(part, "="); ok {
				p.key, p.hasKey, p.text = k, true, v
			} else {
				p.text = part
			}
			parts = append(parts, p)
		}
		return parts, nil
	}
	var parts []rawPart
	var cur rawPart
	var buf strings.Builder
	inQuote := false
	flush := func() {
		cur.text = buf.String()
		parts = append(parts, cur)
		cur = rawPart{}
		buf.Reset()
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote && c == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\'):
			i++
			buf.WriteByte(s[i])
		case inQuote && c == '"':
			inQuote = false
			if i+1 < len(s) && s[i+1] != ',' {
				return nil, errors.New("garbage after quoted string")
			}
		case inQuote:
			buf.WriteByte(c)
		case c == '"' && buf.Len() == 0:
			inQuote, cur.quoted = true, true
		case c == '=' && !cur.hasKey && !cur.quoted:
			cur.key, cur.hasKey = buf.String(), true
			buf.Reset()
		case c == ',':
			flush()
		default:
			buf.WriteByte(c)
		}
	}
	if inQuote {
		return nil, errors.New("unterminated quoted string")
	}
	flush()
	return parts, nil
}

// FormatPropertyString renders items back, default key first without its name.
// A key alias pair is written the way PVE writes it back ("virtio=MAC" for
// model=virtio,macaddr=MAC), so rendered values compare equal to PVE's.
func FormatPropertyString(items []KV, p *Param) string {
	var props map[string]*Param
	if p != nil {
		props = p.SubKeys()
	}
	defaultKey := ""
	for k, sub := range props {
		if sub.DefaultKey {
			defaultKey = k
		}
	}
	var head string
	skip := map[int]bool{}
	for i, it := range items {
		if it.Key == "" || (props != nil && it.Key == defaultKey) {
			head = quoteValue(it.Value)
			if strings.Contains(it.Value, "=") && !strings.HasPrefix(head, `"`) {
				head = quoted(it.Value) // a bare "a=b" would read as a key
			}
			skip[i] = true
			if alias := props[it.Value]; alias != nil && alias.KeyAlias == it.Key {
				for j, other := range items {
					if other.Key == alias.Alias && !skip[j] {
						head = it.Value + "=" + quoteValue(other.Value)
						skip[j] = true
						break
					}
				}
			}
			break
		}
	}
	var out []string
	if head != "" || len(skip) > 0 {
		out = append(out, head)
	}
	for i, it := range items {
		if !skip[i] {
			out = append(out, it.Key+"="+quoteValue(it.Value))
		}
	}
	return strings.Join(out, ",")
}

// quoteValue quotes a value that would not read back as itself: with a
// comma or a quote, blank-edged, or empty ("k=" is an error, not "").
func quoteValue(v string) string {
	if v != "" && !strings.ContainsAny(v, `,"`) && strings.TrimSpace(v) == v {
		return v
	}
	return quoted(v)
}

var quoteEscapes = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

func quoted(v string) string { return `"` + quoteEscapes.Replace(v) + `"` }
