package pve

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// A clone is a create too: its new vmid is pvectl's own, so a clone whose
// answer does not prove PVE refused it (OutcomeUnknown) is looked up
// before it is sent again. PVE names the clone's task after the source,
// not the new guest — qemu-server PVE/API2/Qemu.pm clone_vm forks
// "qmclone", pve-container src/PVE/API2/LXC.pm clone_vm "vzclone", both
// with the source vmid — and several clones of one template share it. So
// this client's clone tasks of the source since the first unsure send are
// waited for, and then the new vmid's config answers: there, named as
// sent and no longer locked for the clone, it is this clone's guest.

// cloneTaskTypes are the worker types of the clone calls.
var cloneTaskTypes = map[GuestType]string{QEMU: "qmclone", LXC: "vzclone"}

// cloneGuest POSTs …/{src}/clone (params hold newid) and waits for its
// task, recovering from faults as described above.
func (c *Client) cloneGuest(ctx context.Context, typ GuestType, node string, src int, params url.Values) error {
	path := guestPath(typ, node, src, "clone")
	newid, err := strconv.Atoi(params.Get("newid"))
	if err != nil {
		return c.RunIdempotentTask(ctx, http.MethodPost, path, params)
	}
	request := http.MethodPost + " " + path
	var since time.Time
	for attempt := 1; ; attempt++ {
		sent := c.serverNow()
		err := c.RunIdempotentTask(ctx, http.MethodPost, path, params)
		if err == nil || ctx.Err() != nil {
			return err
		}
		unsure := OutcomeUnknown(err)
		if !unsure && !(vmidTaken(err) && !since.IsZero()) {
			return err
		}
		if since.IsZero() {
			since = sent
		}
		done, lerr := c.adoptClone(ctx, typ, node, src, newid, params, since, request, attempt, err)
		if done || lerr != nil {
			return lerr
		}
		if !unsure {
			return err
		}
		if rerr := c.beforeResend(ctx, request, attempt, err); rerr != nil {
			return rerr
		}
	}
}

// adoptClone waits for this client's clone tasks of src since then and
// reports done when the new guest is there as sent; an error when newid
// holds something else.
func (c *Client) adoptClone(ctx context.Context, typ GuestType, node string, src, newid int, params url.Values, since time.Time, request string, attempt int, cause error) (bool, error) {
	own, err := c.ownTasks(ctx, node, cloneTaskTypes[typ], src, since)
	if err != nil {
		return false, fmt.Errorf("%w (looking for its task failed too: %v)", cause, err)
	}
	var failed error
	for _, u := range own {
		if _, werr := c.WaitTask(ctx, u); werr != nil && failed == nil {
			failed = werr
		}
	}
	target := params.Get("target")
	if target == "" {
		target = node
	}
	cfg, err := c.GuestConfig(ctx, typ, target, newid)
	switch {
	case IsNotFound(err):
		if len(own) == 1 && failed != nil {
			return true, failed // this clone's task, and it failed
		}
		return false, nil
	case err != nil:
		return true, fmt.Errorf("%w (reading vmid %d back failed too: %v)", cause, newid, err)
	}
	if name := params.Get(nameParam(typ)); name != "" && cfg.Get("name") != name && cfg.Get("hostname") != name {
		return true, fmt.Errorf("%w (vmid %d exists now, but is not the %q this clone sent: another client's)", cause, newid, name)
	}
	if cfg.Get("lock") == "clone" {
		return true, fmt.Errorf("%w (vmid %d is still being cloned by a task pvectl did not find)", cause, newid)
	}
	ev := TaskEvent{Phase: TaskFound, Request: request, Attempt: attempt, Err: cause}
	if len(own) > 0 {
		ev.UPID = own[0]
	}
	observe(ctx, ev)
	return true, nil
}

// nameParam is the create and clone parameter that names a guest.
func nameParam(typ GuestType) string {
	if typ == LXC {
		return "hostname"
	}
	return "name"
}
