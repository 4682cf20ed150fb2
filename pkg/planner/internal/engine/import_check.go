package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The check of an import: what import writes must describe the objects
// as they are, so the documents are planned against the live state —
// the state observe read to make them, not a second read (a plan of the
// documents re-reads everything; import need not, nothing it wrote
// changed PVE). A document that does not plan clean, or does not load,
// is not written as a document but commented out, with the reason; the
// others are planned again without it, as its absence may change their
// plan (a node's network commit looks at the node's interfaces).

// check plans res.Docs, moves those that do not plan clean to
// res.Rejected (with res.Problems lines), and orders the rest. Every
// round rejects a document or ends, so it ends.
func (ic *ImportCtx) check(ctx context.Context, res *ImportResult) error {
	for len(res.Docs) > 0 {
		set, bad, err := LoadEach(res.Docs, ic.Table)
		if err != nil {
			return err
		}
		if len(bad) == 0 {
			if bad, err = ic.planProblems(ctx, res.Docs, set); err != nil {
				return err
			}
		}
		if len(bad) == 0 {
			res.order(set)
			return nil
		}
		if !res.reject(bad) {
			return fmt.Errorf("internal error: the check of the imported documents names none of them: %v", bad)
		}
	}
	return nil
}

// planProblems plans the documents of set against what observe read for
// them and says, by address, why each one that does not plan clean is
// not.
func (ic *ImportCtx) planProblems(ctx context.Context, docs []*ImportedDoc, set *spec.Set) (map[string]string, error) {
	obs := &Observed{Conns: map[string]*LiveConn{"": ic.Lc}, Objs: map[string]*LiveObj{}, Errs: map[string]error{}}
	for _, d := range docs {
		obs.Objs[d.Address()] = ic.live[d]
	}
	// What judging prerequisites needs and the documents do not provide
	// (a bridge of another node's): read once per connection, cached.
	readPrereqs(ctx, set, obs)
	p, err := Build(ctx, set, obs, Options{Schema: ic.Table})
	bad := map[string]string{}
	var re *resourceErrors
	switch {
	case errors.As(err, &re):
		for addr, e := range re.byAddress {
			bad[addr] = strings.TrimPrefix(e.Error(), addr+": ")
		}
	case err != nil:
		return nil, fmt.Errorf("plan the imported documents: %w", err)
	default:
		for _, c := range p.Changes {
			if c.Action != NoOp {
				bad[c.Address] = changeProblem(c)
			}
		}
	}
	return bad, ctx.Err()
}

// changeProblem says in one line what a plan would do: the action, a
// reason's first line (a staged network diff follows it) and the keys
// that differ.
func changeProblem(c *Change) string {
	var why []string
	for _, r := range c.Reasons {
		line, _, _ := strings.Cut(r, "\n")
		why = append(why, strings.TrimSuffix(strings.TrimSpace(line), ":"))
	}
	var paths []string
	for _, d := range c.Diff {
		paths = append(paths, d.Path)
	}
	msg := "plan would " + c.Action.String()
	if len(why) > 0 {
		msg += ": " + strings.Join(why, "; ")
	}
	if len(paths) > 0 {
		msg += " (" + strings.Join(paths, ", ") + ")"
	}
	return msg
}

// reject moves the documents bad names to Rejected, with a Problems
// line each, and drops the other documents' edges to them. It reports
// whether it moved any.
func (res *ImportResult) reject(bad map[string]string) bool {
	moved := false
	res.Docs = slices.DeleteFunc(res.Docs, func(d *ImportedDoc) bool {
		why, ok := bad[d.Address()]
		if ok {
			d.Problem, moved = why, true
			res.Rejected = append(res.Rejected, d)
			res.Problems = append(res.Problems, fmt.Sprintf("%s: commented out: it would not plan clean: %s", d.Address(), why))
		}
		return ok
	})
	for _, d := range res.Docs {
		d.DependsOn = slices.DeleteFunc(d.DependsOn, func(a string) bool { _, gone := bad[a]; return gone })
	}
	slices.SortFunc(res.Rejected, func(a, b *ImportedDoc) int { return strings.Compare(a.Address(), b.Address()) })
	return moved
}

// LoadEach loads the documents as one set; when they do not load, it
// names instead (bad) the documents Load's problems point into — one
// that is wrong alone, or the second of two that clash.
func LoadEach(docs []*ImportedDoc, table *schema.Table) (*spec.Set, map[string]string, error) {
	set, starts, err := LoadDocs(docs, table)
	var diags spec.Diagnostics
	if err == nil || !errors.As(err, &diags) {
		return set, nil, err
	}
	bad := map[string]string{}
	for _, dg := range diags {
		// The document whose lines hold the problem: the last to start
		// at or before it.
		i, found := slices.BinarySearch(starts, dg.Pos.Line)
		if !found {
			i--
		}
		if i < 0 || dg.Pos.Line == 0 {
			return nil, nil, fmt.Errorf("internal error: the imported documents do not load: %w", err)
		}
		addr := docs[i].Address()
		bad[addr] = strings.TrimPrefix(bad[addr]+"; ", "; ") + "the document does not load: " + dg.Msg
	}
	return nil, bad, nil
}

// LoadDocs reads documents back as specs, the placeholders resolved to
// the live values they stand for; starts are the lines the documents
// start at in what Load read.
func LoadDocs(docs []*ImportedDoc, table *schema.Table) (*spec.Set, []int, error) {
	var buf bytes.Buffer
	starts := make([]int, len(docs))
	line := 1
	for i, d := range docs {
		if i > 0 {
			buf.WriteString("---\n")
			line++
		}
		starts[i] = line
		b, err := d.YAML()
		if err != nil {
			return nil, nil, err
		}
		buf.Write(b)
		line += bytes.Count(b, []byte("\n"))
	}
	vals := map[string]string{}
	for _, d := range docs {
		d.CopySecrets(vals)
	}
	getenv := func(name string) (string, bool) {
		v, ok := vals[name]
		return v, ok
	}
	set, err := spec.Load([]string{spec.StdinPath}, spec.LoadOptions{Getenv: getenv, Schema: table, Stdin: &buf})
	return set, starts, err
}
