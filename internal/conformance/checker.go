package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Checker holds the full apidoc: parameters (as schema.Table) and the
// return schemas schema.Table leaves out.
type Checker struct {
	table   *schema.Table
	returns map[string]*Returns // "METHOD template"
	stale   []string            // Deviations that name nothing in this apidoc
}

// Load parses the apidoc at path.
func Load(path string) (*Checker, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load apidoc: %w", err)
	}
	return Parse(b)
}

// Parse builds a Checker from apidoc JSON.
func Parse(apidoc []byte) (*Checker, error) {
	t, err := schema.FromAPIDoc(bytes.NewReader(apidoc))
	if err != nil {
		return nil, err
	}
	var roots []node
	if err := json.Unmarshal(apidoc, &roots); err != nil {
		return nil, fmt.Errorf("decode apidoc: %w", err)
	}
	c := &Checker{table: t, returns: map[string]*Returns{}}
	var walk func(n *node)
	walk = func(n *node) {
		for verb, info := range n.Info {
			ret, _ := info["returns"].(map[string]any)
			c.returns[verb+" "+n.Path] = returnsFromSchema(ret)
		}
		for i := range n.Children {
			walk(&n.Children[i])
		}
	}
	for i := range roots {
		walk(&roots[i])
	}
	c.stale = applyDeviations(c.returns, Deviations)
	return c, nil
}

type node struct {
	Path     string                    `json:"path"`
	Info     map[string]map[string]any `json:"info"`
	Children []node                    `json:"children"`
}

// Table is the parameter table the checker uses.
func (c *Checker) Table() *schema.Table { return c.table }

// Request checks one request: path is the path under /api2/json (a query
// string, if any, is merged into params); params are query and form body
// merged. Path variables count as parameters, as they do in PVE.
func (c *Checker) Request(method, path string, params url.Values) []error {
	return c.request(method, path, params, schema.CheckOptions{})
}

func (c *Checker) request(method, path string, params url.Values, opts schema.CheckOptions) []error {
	method = strings.ToUpper(method)
	merged := url.Values{}
	if p, q, ok := strings.Cut(path, "?"); ok {
		path = p
		qv, err := url.ParseQuery(q)
		if err != nil {
			return []error{fmt.Errorf("%s %s: bad query string: %v", method, path, err)}
		}
		for k, v := range qv {
			merged[k] = append(merged[k], v...)
		}
	}
	for k, v := range params {
		merged[k] = append(merged[k], v...)
	}
	m, vars, err := c.match(method, path)
	if err != nil {
		return []error{err}
	}
	for k, v := range vars {
		if _, ok := merged[k]; !ok {
			merged[k] = []string{v}
		}
	}
	// PVE joins repeated values of a list parameter before it validates.
	m.JoinLists(merged)
	bad := m.Check(merged, opts)
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(bad)) {
		errs = append(errs, fmt.Errorf("%s %s: parameter %s: %s", method, m.Path, name, bad[name]))
	}
	return errs
}

func (c *Checker) match(method, path string) (*schema.Method, map[string]string, error) {
	if m, vars, ok := c.table.Match(method, path); ok {
		return m, vars, nil
	}
	for _, verb := range []string{"GET", "POST", "PUT", "DELETE"} {
		if _, _, ok := c.table.Match(verb, path); ok && verb != method {
			return nil, nil, fmt.Errorf("%s %s: method not allowed by the API schema", method, path)
		}
	}
	return nil, nil, fmt.Errorf("%s %s: no such path in the API schema", method, path)
}

// Response checks one response body: on 2xx, "data" must match the
// method's return schema; otherwise the body must be PVE's error envelope.
func (c *Checker) Response(method, path string, status int, body []byte) []error {
	method = strings.ToUpper(method)
	path, _, _ = strings.Cut(path, "?")
	where := method + " " + path
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var env map[string]any
	if err := dec.Decode(&env); err != nil || env == nil {
		return []error{fmt.Errorf("%s: status %d: body is not a JSON object", where, status)}
	}
	if status < 200 || status > 299 {
		return checkErrorEnvelope(where, status, env)
	}
	m, _, err := c.match(method, path)
	if err != nil {
		return []error{err}
	}
	data, ok := env["data"]
	if !ok {
		return []error{fmt.Errorf("%s: status %d: body has no \"data\"", where, status)}
	}
	var errs []error
	for _, e := range c.returns[m.Method+" "+m.Path].Check("data", data) {
		errs = append(errs, fmt.Errorf("%s: response %w", where, e))
	}
	return errs
}

func checkErrorEnvelope(where string, status int, env map[string]any) []error {
	var errs []error
	if d, ok := env["data"]; !ok || d != nil {
		errs = append(errs, fmt.Errorf("%s: status %d: error body must have \"data\": null", where, status))
	}
	if msg, ok := env["message"]; ok {
		if _, isStr := msg.(string); !isStr {
			errs = append(errs, fmt.Errorf("%s: status %d: \"message\" must be a string", where, status))
		}
	}
	if pe, ok := env["errors"]; ok {
		obj, isObj := pe.(map[string]any)
		if !isObj {
			errs = append(errs, fmt.Errorf("%s: status %d: \"errors\" must be an object", where, status))
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if _, isStr := obj[k].(string); !isStr {
				errs = append(errs, fmt.Errorf("%s: status %d: errors.%s must be a string", where, status, k))
			}
		}
	}
	return errs
}
