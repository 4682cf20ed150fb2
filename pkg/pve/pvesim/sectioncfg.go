package pvesim

import (
	"crypto/sha1"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// sections is a SectionConfig file of pmxcfs (status.cfg, jobs.cfg):
// sections by id, each its options with "type". pve-common
// PVE/SectionConfig.pm: check_config refuses unknown and (on update)
// fixed options, and on create missing required ones; delete_from_config
// refuses deleting required or fixed ones, and setting and deleting one
// key at once.
type sections map[string]map[string]string

// sectionOpt is one option of a section type (a plugin's options()).
type sectionOpt struct{ required, fixed bool }

// digest is the SHA-1 of the file as written.
func (c sections) digest() string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(c)) {
		sec := c[id]
		fmt.Fprintf(&b, "%s: %s\n", sec["type"], id)
		for _, k := range slices.Sorted(maps.Keys(sec)) {
			if k != "type" {
				fmt.Fprintf(&b, "\t%s %s\n", k, sec[k])
			}
		}
		b.WriteString("\n")
	}
	return fmt.Sprintf("%x", sha1.Sum([]byte(b.String())))
}

// checkSection is check_config for a section of a type with opts.
func checkSection(opts map[string]sectionOpt, params map[string]string, create bool) error {
	for _, k := range slices.Sorted(maps.Keys(params)) {
		o, ok := opts[k]
		if !ok {
			return fmt.Errorf("unexpected property '%s'", k)
		}
		if !create && o.fixed {
			return fmt.Errorf("can't change value of fixed parameter '%s'", k)
		}
		if err := checkNoLineFeed(params[k]); err != nil {
			return err
		}
	}
	if create {
		for _, k := range slices.Sorted(maps.Keys(opts)) {
			if _, set := params[k]; opts[k].required && !set {
				return fmt.Errorf("missing value for required option '%s'", k)
			}
		}
	}
	return nil
}

// checkNoLineFeed is SectionConfig.pm check_value's refusal of a value
// with a line feed (a config line cannot hold it), schema checked or not.
func checkNoLineFeed(v string) error {
	if strings.ContainsAny(v, "\n\r") {
		return fmt.Errorf("property contains a line feed")
	}
	return nil
}

// deleteSectionKeys is delete_from_config.
func deleteSectionKeys(opts map[string]sectionOpt, sec, set map[string]string, del []string) error {
	for _, k := range del {
		o, ok := opts[k]
		switch {
		case !ok:
			return fmt.Errorf("no such option '%s'", k)
		case o.required:
			return fmt.Errorf("unable to delete required option '%s'", k)
		case o.fixed:
			return fmt.Errorf("unable to delete fixed option '%s'", k)
		}
		if _, both := set[k]; both {
			return fmt.Errorf("cannot set and delete property '%s' at the same time!", k)
		}
	}
	for _, k := range del {
		delete(sec, k)
	}
	return nil
}

// requestOptions are the request's section options: every parameter but
// those named in skip.
func requestOptions(q *request, skip ...string) map[string]string {
	out := map[string]string{}
	for k := range q.params {
		if !slices.Contains(skip, k) {
			out[k] = q.get(k)
		}
	}
	return out
}

// typedAnswer types stored values as PVE's JSON answer carries them:
// booleans and integers of the method's parameters as numbers.
func typedAnswer(method, path string, sec map[string]string) map[string]any {
	out := map[string]any{}
	m, _ := schema.Default().Lookup(method, path)
	for k, v := range sec {
		out[k] = v
		if m == nil {
			continue
		}
		if p, ok := m.Param(k); ok && (p.Type == "boolean" || p.Type == "integer") {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				out[k] = n
			}
		}
	}
	return out
}
