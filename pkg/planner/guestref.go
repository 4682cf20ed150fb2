package planner

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The cluster-operation kinds (HAResource, HARule, BackupJob,
// ReplicationJob) name guests by ${QemuVM/<name>.vmid} in their params.
// Until the engine puts output values in (issue 19), these kinds look the
// guest up themselves, by its name among the guests PVE has now: at plan
// time in the connection's guest lists, at apply time in fresh ones (the
// guest may have been made in this apply). A guest that is not there yet
// leaves the value unknown: the entry cannot exist yet.

// guestTypes maps the kinds a guest reference names to PVE's guest type.
var guestTypes = map[string]pve.GuestType{spec.KindQemuVM: pve.QEMU, spec.KindLxcContainer: pve.LXC}

// guestOutput is the value of one output of a guest row.
func guestOutput(row *pve.ClusterResource, output string) (string, bool) {
	switch output {
	case "vmid":
		return strconv.Itoa(row.VMID), true
	case "node":
		return row.Node, true
	}
	return "", false
}

// resolveWith puts into p's values the outputs that lookup finds; known
// is false when one is not found.
func resolveWith(p map[string]string, lookup func(ref spec.OutputRef) (*pve.ClusterResource, error)) (map[string]string, bool, error) {
	out := maps.Clone(p)
	known := true
	var lookErr error
	for key, v := range p {
		if !spec.HasOutputRef(v) {
			continue
		}
		nv, ok := spec.ResolveOutputs(v, func(ref spec.OutputRef) (string, bool) {
			if _, isGuest := guestTypes[ref.Kind]; !isGuest {
				return "", false
			}
			row, err := lookup(ref)
			if err != nil {
				lookErr = err
				return "", false
			}
			if row == nil {
				return "", false
			}
			return guestOutput(row, ref.Output)
		})
		if lookErr != nil {
			return nil, false, lookErr
		}
		if !ok {
			known = false
			continue
		}
		out[key] = nv
	}
	return out, known, nil
}

// oneNamed picks the only non-template guest of rows named name.
func oneNamed(rows []*pve.ClusterResource, ref spec.OutputRef) (*pve.ClusterResource, error) {
	switch len(rows) {
	case 0:
		return nil, nil
	case 1:
		return rows[0], nil
	}
	return nil, fmt.Errorf("%s: %d guests are named %s: pin the guest's vmid", ref, len(rows), ref.Name)
}

// resolveGuests resolves p's guest references from the connection's guest
// lists (read once).
func resolveGuests(lc *engine.LiveConn, ctx context.Context, p map[string]string) (map[string]string, bool, error) {
	return resolveWith(p, func(ref spec.OutputRef) (*pve.ClusterResource, error) {
		ix, err := guestIndexOf(lc, ctx, guestTypes[ref.Kind])
		if err != nil {
			return nil, err
		}
		return oneNamed(ix.named(ref.Name, false), ref)
	})
}

// resolveGuestsLive resolves p's guest references from fresh lists.
func resolveGuestsLive(ctx context.Context, cl *pve.Client, p map[string]string) (map[string]string, bool, error) {
	needed := false
	for _, v := range p {
		needed = needed || spec.HasOutputRef(v)
	}
	if !needed {
		return p, true, nil
	}
	res, err := cl.ClusterResources(ctx, "")
	if err != nil {
		return nil, false, fmt.Errorf("list cluster resources: %w", err)
	}
	indexes := map[pve.GuestType]*guestIndex{}
	return resolveWith(p, func(ref spec.OutputRef) (*pve.ClusterResource, error) {
		typ := guestTypes[ref.Kind]
		ix, ok := indexes[typ]
		if !ok {
			rows, err := guestRows(ctx, cl, res, typ, nil)
			if err != nil {
				return nil, err
			}
			ix = newGuestIndex(typ, rows)
			indexes[typ] = ix
		}
		return oneNamed(ix.named(ref.Name, false), ref)
	})
}

// unresolvedRefs names the output references in p's values.
func unresolvedRefs(p map[string]string) string {
	var refs []string
	for _, v := range p {
		for _, ref := range spec.OutputRefs(v) {
			refs = append(refs, ref.String())
		}
	}
	return strings.Join(compare.SortedUnique(refs), ", ")
}
