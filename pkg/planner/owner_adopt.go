package planner

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/marks"
	"github.com/pvectl/pvectl/pkg/pve"
)

// Adoption: guests made by hand, or by a pvectl before ownership marks,
// carry no mark and are never pruned. `pvectl import --stack NAME` adopts
// the guests it writes as documents into stack NAME: it writes the mark
// on each (docs/decisions.md, "Ownership marks and --prune").

// Adopt writes stack's owner mark on the imported documents' objects of
// kinds that carry one (guests), through connection conn. A guest marked
// by another stack already is left as it is (a problem); one marked by
// this stack is counted as adopted. It returns the adopted objects'
// addresses and the problems, one line each.
func Adopt(ctx context.Context, clients engine.Clients, conn string, res *engine.ImportResult, stack string) (adopted, problems []string) {
	cl, err := clients.Client(conn)
	if err != nil {
		return nil, []string{err.Error()}
	}
	for _, d := range res.Docs {
		ok, is := engine.Kinds[d.Kind].(engine.OwnerKind)
		lo := res.Live[d]
		if !is || lo == nil || !lo.Exists || d.ReadOnly {
			continue
		}
		done, err := ok.Adopt(ctx, cl, lo, stack)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: not adopted into stack %s: %v", d.Address(), stack, err))
		case done:
			adopted = append(adopted, d.Address())
		}
	}
	return adopted, problems
}

// Adopt writes the owner mark of stack on the guest lo, with the digest
// it was read with (an edit meanwhile fails the write rather than being
// overwritten). false: the kind's objects carry no mark (templates).
func (g guest) Adopt(ctx context.Context, cl *pve.Client, lo *engine.LiveObj, stack string) (bool, error) {
	vmid := liveOf(lo).VMID
	if vmid == 0 {
		return false, nil
	}
	desc := lo.Config.Get("description")
	if have, id, ok := marks.ParseOwnerMark(desc); ok && id == vmid {
		if have != stack {
			return false, fmt.Errorf("%s %d belongs to stack %s", g.noun, vmid, have)
		}
		if marks.HasOwnerTag(lo.Config.Get("tags")) {
			return true, nil
		}
	}
	values := url.Values{
		"description": {marks.WithOwnerMark(desc, stack, vmid)},
		"tags":        {marks.WithOwnerTag(lo.Config.Get("tags"))},
	}
	if lo.Digest != "" {
		values.Set("digest", lo.Digest)
	}
	if err := cl.UpdateGuest(ctx, g.typ, lo.Node, vmid, values); err != nil {
		return false, fmt.Errorf("write the owner mark on %s %s: %w", g.noun, strconv.Itoa(vmid), err)
	}
	return true, nil
}

func (templateKind) Adopt(context.Context, *pve.Client, *engine.LiveObj, string) (bool, error) {
	return false, nil
}
