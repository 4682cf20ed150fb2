package planner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Partial visibility. PVE's lists leave out, silently, every guest the
// token may not audit (pve-manager API2/Cluster.pm resources: VM.Audit on
// /vms/N). A guest found by name that is not in them may exist all the
// same, hidden: creating it would make a second one. And the permission
// listing cannot show the holes by itself: pve-access-control
// RPCEnvironment.pm get_effective_permissions lists the top-level paths,
// the paths ACLs name and pool members' paths, but leaves out every path
// where nothing is held ("filter paths where user has NO permissions"), so
// a NoAccess on /vms/101 for the token looks like no ACL at all. So before
// a guest found by name is created, the engine looks for guests hidden
// from the token with what PVE does tell it:
//
//   - the listing: VM.Audit on /vms that does not propagate (every guest
//     not granted one by one is hidden), or a /vms/N path listed without
//     VM.Audit (a narrower role there);
//   - the ids PVE says are taken: /cluster/nextid is the lowest free id
//     (pve-manager API2/Cluster.pm nextid, over the whole vmlist), so
//     every id below it down to the first free one (asked with
//     /cluster/nextid?vmid=N, which answers "VM N already exists" whoever
//     may see it) is a guest; one missing from the lists is hidden;
//   - the ACL entries the token may read (GET /access/acl lists them on
//     the paths it may change permissions of, all of them with Sys.Audit
//     on /access): an entry on /vms/N where the token holds no VM.Audit.
//
// A hidden guest above nextid whose ACL the token may not read cannot be
// found: PVE tells the token nothing about it (docs/decisions.md).

// maxHiddenProbes bounds the /cluster/nextid?vmid=N questions of one
// connection's search below nextid.
const maxHiddenProbes = 16

// hiddenGuests is what a connection's token cannot see under /vms.
type hiddenGuests struct {
	paths []string // /vms/N, sorted by id
	// noPropagate: VM.Audit on /vms does not reach the guests below it.
	noPropagate bool
	// more: the search below nextid stopped at its bound.
	more bool
}

func (h *hiddenGuests) any() bool { return h.noPropagate || len(h.paths) > 0 }

// hiddenGuests finds, once per connection, the guests hidden from its
// token.
func hiddenGuestsOf(lc *engine.LiveConn, ctx context.Context) (*hiddenGuests, error) {
	if h, ok := lc.KeptValue("hidden guests").(*hiddenGuests); ok {
		return h, nil
	}
	h := &hiddenGuests{}
	// /vms/0 is no guest's path: it gets what an unlisted guest gets.
	h.noPropagate = lc.Perms.Has("/vms", "VM.Audit") && !lc.Perms.Has("/vms/0", "VM.Audit")
	ids := map[int]bool{}
	for p := range lc.Perms {
		if id, ok := guestPathID(p); ok && !lc.Perms.Has(p, "VM.Audit") {
			ids[id] = true
		}
	}
	visible := map[int]bool{}
	for _, row := range lc.Resources {
		if row.Type == string(pve.QEMU) || row.Type == string(pve.LXC) {
			visible[row.VMID] = true
		}
	}
	taken := map[int]bool{}
	more, err := takenBelowNext(lc, ctx, visible, taken)
	if err != nil {
		return nil, err
	}
	h.more = more
	if err := dropNewGuests(lc, ctx, taken); err != nil {
		return nil, err
	}
	for id := range taken {
		ids[id] = true
	}
	if err := hiddenByACL(lc, ctx, ids); err != nil {
		return nil, err
	}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		h.paths = append(h.paths, vmPath(id))
	}
	lc.Keep("hidden guests", h)
	return h, nil
}

// takenBelowNext adds to hidden the ids below /cluster/nextid's answer
// that are taken but not visible, from nextid down to the first free id
// (nextid counts from datacenter.cfg's lower bound, which the token may
// not read). It reports whether it stopped at maxHiddenProbes.
func takenBelowNext(lc *engine.LiveConn, ctx context.Context, visible, hidden map[int]bool) (bool, error) {
	next, err := lc.Client.NextID(ctx)
	if err != nil {
		return false, fmt.Errorf("ask for the next free vmid: %w", err)
	}
	probes := 0
	for id := next - 1; id >= 100; id-- {
		if visible[id] {
			continue
		}
		if probes == maxHiddenProbes {
			return true, nil
		}
		probes++
		free, err := lc.Client.VMIDFree(ctx, id)
		if err != nil {
			return false, fmt.Errorf("ask whether vmid %d is taken: %w", id, err)
		}
		if free {
			return false, nil
		}
		hidden[id] = true
	}
	return false, nil
}

// dropNewGuests removes from taken the guests a fresh /cluster/resources
// lists: they were made after the lists this plan read (another run
// creating guests at this moment), not hidden — /cluster/resources shows
// a guest as soon as its config exists, to whoever may audit it
// (pve-manager API2/Cluster.pm resources). Nothing to read when taken is
// empty.
func dropNewGuests(lc *engine.LiveConn, ctx context.Context, taken map[int]bool) error {
	if len(taken) == 0 {
		return nil
	}
	rows, err := lc.Client.ClusterResources(ctx, "vm")
	if err != nil {
		return fmt.Errorf("read the cluster's guests again: %w", err)
	}
	for _, row := range rows {
		delete(taken, row.VMID)
	}
	return nil
}

// hiddenByACL adds to hidden the guests an ACL entry the token may read
// names where the token holds no VM.Audit (asked for the path itself:
// the listing leaves such a path out).
func hiddenByACL(lc *engine.LiveConn, ctx context.Context, hidden map[int]bool) error {
	entries, err := lc.ACLList(ctx)
	if err != nil {
		return fmt.Errorf("list ACL entries: %w", err)
	}
	for _, e := range entries {
		id, ok := guestPathID(e.Path)
		if !ok || hidden[id] {
			continue
		}
		if err := exactPath(lc, ctx, e.Path); err != nil {
			return err
		}
		if !lc.Perms.Has(e.Path, "VM.Audit") {
			hidden[id] = true
		}
	}
	return nil
}

// guestPathID is N of an ACL path /vms/N.
func guestPathID(path string) (int, bool) {
	s, ok := strings.CutPrefix(path, "/vms/")
	if !ok {
		return 0, false
	}
	id, err := strconv.Atoi(s)
	return id, err == nil && id > 0
}

// checkNameVisible refuses to let a guest found by name be created while
// guests are hidden from the token: one of them may be it.
func checkNameVisible(lc *engine.LiveConn, ctx context.Context, noun, name string) error {
	h, err := hiddenGuestsOf(lc, ctx)
	if err != nil {
		return fmt.Errorf("check which guests the token can see: %w", err)
	}
	if !h.any() {
		return nil
	}
	token := lc.Client.TokenID()
	user, _, _ := strings.Cut(token, "!")
	const tail = " (a privilege-separated token holds only what its user holds too: grant it to --users %s as well)"
	if h.noPropagate {
		return fmt.Errorf("refusing to create the %s %q: the API token %s holds VM.Audit on /vms without propagation, so PVE hides every guest below it that is not granted one by one, and a %s named %s may exist already. "+
			"Let it see them all: pveum acl modify /vms --roles PVEAuditor --tokens '%s' --propagate 1"+tail,
			noun, name, token, noun, name, token, user)
	}
	paths := strings.Join(h.paths, ", ")
	if h.more {
		paths += " and maybe more"
	}
	first := h.paths[0]
	return fmt.Errorf("refusing to create the %s %q: the API token %s cannot see %s (no VM.Audit there: a NoAccess or a narrower role on the path), PVE hides such guests from every list, and one of them may be the %s named %s. "+
		"Let it see them: remove what hides them and grant VM.Audit, e.g. pveum acl delete %s --roles NoAccess --tokens '%s'; pveum acl modify %s --roles PVEAuditor --tokens '%s'"+tail,
		noun, name, token, paths, noun, name, first, token, first, token, user)
}

// exactPath asks PVE for the token's privileges on one path that its
// listing left out (a NoAccess there looks like the parent's rights in
// the listing), once per path.
func exactPath(lc *engine.LiveConn, ctx context.Context, path string) error {
	if lc.Perms == nil {
		return nil
	}
	if _, listed := lc.Perms[path]; listed {
		return nil
	}
	privs, err := lc.Client.PermissionsAt(ctx, path)
	if err != nil {
		return err
	}
	lc.Perms[path] = privs
	return nil
}

// exactPerms makes the token's rights exact on the object paths of needs
// (a pool or storage a create relies on): what the listing left
// out is asked for, so a hidden pool or storage is not taken for one the
// token may use.
func exactPerms(lc *engine.LiveConn, ctx context.Context, needs []engine.PermNeed) error {
	for _, n := range needs {
		for _, p := range append([]string{n.Path, n.Or}, altPaths(n)...) {
			if !objectPath(p) {
				continue
			}
			if err := exactPath(lc, ctx, p); err != nil {
				return err
			}
		}
	}
	return nil
}

func altPaths(n engine.PermNeed) []string {
	var out []string
	for _, a := range n.Alt {
		out = append(out, a.Path, a.Or)
	}
	return out
}

// objectPath: /pool/P or /storage/S. (A guest's own /vms/N is not asked
// for: a create of a vmid that a hidden guest holds is refused by PVE, "VM
// N already exists", and asking for every new guest's path would cost a
// call each.)
func objectPath(p string) bool {
	for _, pre := range []string{"/pool/", "/storage/"} {
		if rest, ok := strings.CutPrefix(p, pre); ok && rest != "" && !strings.Contains(rest, "/") {
			return true
		}
	}
	return false
}

// checkCreateVisible runs before a guest is planned as created: the
// guest, pool and storages its create relies on must be visible to the
// token as they are, and a guest found by name must not be among those
// hidden from it.
func (g guest) checkCreateVisible(ctx context.Context, lc *engine.LiveConn, r *spec.Resource, vmid int) error {
	if lc.Perms == nil {
		return nil
	}
	needs := append(g.listNeeds(r), g.createPerms(r)...)
	if err := exactPerms(lc, ctx, needs); err != nil {
		return err
	}
	if err := missingPerms(lc, g.listNeeds(r)); err != nil {
		return err
	}
	if vmid != 0 {
		return nil
	}
	return checkNameVisible(lc, ctx, guestNoun(string(g.typ)), g.name(r))
}

// missingPerms is checkPerms for an error its caller names the resource
// of.
func missingPerms(lc *engine.LiveConn, needs []engine.PermNeed) error {
	var msgs []string
	for _, n := range needs {
		if m := lc.PermMessage(n); !lc.Held(n) && !slices.Contains(msgs, m) {
			msgs = append(msgs, m)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}
