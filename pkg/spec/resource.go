package spec

import "strings"

// Bool returns a pvectl-own boolean key and whether it was set.
func (r *Resource) Bool(key string) (value, ok bool) {
	value, ok = r.Own[key].(bool)
	return value, ok
}

// String returns a pvectl-own string key ("" if unset or not a string).
func (r *Resource) String(key string) string {
	s, _ := r.Own[key].(string)
	return s
}

// Strings returns a pvectl-own list key as strings (nil if unset).
func (r *Resource) Strings(key string) []string {
	switch v := r.Own[key].(type) {
	case []any:
		out := make([]string, 0, len(v))
		for _, it := range v {
			if s, ok := it.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case string:
		return strings.Split(v, ",")
	}
	return nil
}

// Node is the PVE node the resource lives on ("" when the spec leaves it to
// the connection's single node).
func (r *Resource) Node() string { return r.Params["node"] }

// CreateCall returns the PVE method and path template whose parameters a
// kind's spec passes through (ok is false for Connection and Defaults).
func CreateCall(kind string) (method, path string, ok bool) {
	k := kindTable[kind]
	if k == nil || k.Create == nil {
		return "", "", false
	}
	return k.Create.Method, k.Create.Path, true
}
