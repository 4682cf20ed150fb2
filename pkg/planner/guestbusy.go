package planner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/spec"
)

// Guests a PVE task holds. PVE marks a guest that a task works on with a
// config lock (pve-guest-common AbstractConfig.pm: create, clone,
// migrate, backup, snapshot, rollback, disk …) and refuses other changes
// while it is set (check_lock). Two cases matter to a plan:
//
//   - A guest being created or cloned has, until its task ends, only a
//     stub config: `lock: create` (create_and_lock_config) or `lock:
//     clone` (qemu-server's temporary clone config), and no name. A guest
//     found by name is not found then; taken for absent, it would be
//     created a second time.
//   - A guest that exists and is locked is mid-change: its config is not
//     what it will be (a stub, a half-done migration), and PVE refuses
//     what pvectl would do to it.

// busy says what holds r's guest: a lock on it, or, when it was looked
// for by name and not found, guests still being created or cloned that
// may become it. nil when nothing does.
func (g guest) busy(r *spec.Resource, lo *engine.LiveObj) *engine.BusyError {
	gl := liveOf(lo)
	cli := g.cli
	if lo.Exists {
		lock := lo.Config.Get("lock")
		if lock == "" {
			return nil
		}
		return &engine.BusyError{Address: r.Address(), VMIDs: []int{gl.VMID},
			What: fmt.Sprintf("%s %d is locked (%s): a PVE task is working on it", g.noun, gl.VMID, lock),
			Hint: fmt.Sprintf("run again when the task has ended; if no task runs, one that failed left the lock (see the node's task log), and '%s unlock %d' on the node removes it", cli, gl.VMID)}
	}
	if len(gl.more().Stubs) == 0 {
		return nil
	}
	ids := make([]string, len(gl.more().Stubs))
	for i, id := range gl.more().Stubs {
		ids[i] = strconv.Itoa(id)
	}
	list := strings.Join(ids, ", ")
	return &engine.BusyError{Address: r.Address(), VMIDs: gl.more().Stubs,
		What: fmt.Sprintf("no %s is named %s, but PVE is still creating or cloning %s %s (locked, no name yet): one of them may become it",
			guestNoun(string(g.typ)), g.name(r), pluralNoun(guestNoun(string(g.typ)), len(ids)), list),
		Hint: fmt.Sprintf("run again when their tasks have ended; if no task runs, a create that failed left it behind: remove it in PVE ('%s destroy %s') or give this %s a vmid",
			cli, ids[0], guestNoun(string(g.typ)))}
}

func pluralNoun(noun string, n int) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}
