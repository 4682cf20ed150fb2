package pve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Creating a guest is the one non-idempotent write pvectl sends again
// after a fault, because it is the one whose outcome can be looked up for
// certain: the vmid is pvectl's own (claimed for this run), and PVE names
// the create task after it — qemu-server (PVE/API2/Qemu.pm create_vm)
// forks a "qmcreate" worker, pve-container (src/PVE/API2/LXC.pm
// create_vm) a "vzcreate" one, with the vmid as the task's id and the
// caller as its user — and lists it among the node's active tasks before
// it answers (PVE::RESTEnvironment fork_worker writes the active file
// before the UPID is returned).
//
// So a create whose answer does not prove that PVE refused it
// (OutcomeUnknown: no answer, a gateway's or pveproxy's 5xx, a 500 without
// PVE's message) is looked for in GET /nodes/{node}/tasks (vmid,
// typefilter, the token's user, tasks since a moment before the first
// such send): found, it is waited for like any task; not found, PVE never
// started it and it is sent again. A 500 with PVE's message is its
// refusal; one that is not a lasting one (a cluster filesystem hiccup, a
// failed lock on a shared file) is looked for too, then sent again. Once
// a send's outcome was unknown, PVE's "VM N already exists" for the same
// vmid is looked up the same way: the guest is this create's own when its
// task is, never another client's. At most createTries sends in all.

// createTries bounds how often one create is sent.
const createTries = 3

// beforeResend comes between two sends of a create-like call (a guest
// create or clone, a download) whose outcome stayed unknown and whose
// task was not found: after createTries sends it gives up with err,
// saying how often it was sent; else it reports the retry (TaskFaultRetry)
// and waits out the backoff, failing only when ctx ends first. nil means
// send again.
func (c *Client) beforeResend(ctx context.Context, request string, attempt int, err error) error {
	if attempt >= createTries {
		return fmt.Errorf("%w (sent %d times)", err, attempt)
	}
	observe(ctx, TaskEvent{Phase: TaskFaultRetry, Request: request, Attempt: attempt, Err: err})
	if serr := Sleep(ctx, c.backoff(attempt)); serr != nil {
		return fmt.Errorf("%w (while retrying: %w)", err, serr)
	}
	return nil
}

// createTaskTypes are the worker types of the create calls.
var createTaskTypes = map[GuestType]string{QEMU: "qmcreate", LXC: "vzcreate"}

// createGuest POSTs /nodes/{node}/{qemu|lxc} and waits for its task,
// recovering from faults as described above.
func (c *Client) createGuest(ctx context.Context, typ GuestType, node string, params url.Values) error {
	path := apiPath("nodes", node, string(typ))
	vmid, err := strconv.Atoi(params.Get("vmid"))
	if err != nil {
		// Without the vmid the task cannot be found again: one send.
		return c.RunTask(ctx, http.MethodPost, path, params)
	}
	request := http.MethodPost + " " + path
	var since time.Time // the first send whose outcome is unknown
	for attempt := 1; ; attempt++ {
		sent := c.serverNow()
		upid, err := c.StartTask(ctx, http.MethodPost, path, params)
		if err == nil {
			if upid.IsZero() {
				return nil
			}
			_, err = c.WaitTask(ctx, upid)
			return err
		}
		if ctx.Err() != nil {
			return err
		}
		unsure := OutcomeUnknown(err) || passingServerError(err)
		if !unsure && !(vmidTaken(err) && !since.IsZero()) {
			return err
		}
		if since.IsZero() {
			since = sent
		}
		done, lerr := c.adoptCreate(ctx, typ, node, vmid, since, request, attempt, err)
		if done || lerr != nil {
			return lerr
		}
		if !unsure {
			return err // taken, and not by a task of this create: another client's
		}
		if rerr := c.beforeResend(ctx, request, attempt, err); rerr != nil {
			return rerr
		}
	}
}

// adoptCreate looks for the create task of vmid that this client started
// since then; found, it waits for it and reports done with the task's
// outcome. A task whose guest is gone again was a namesake's, destroyed
// since: not this create.
func (c *Client) adoptCreate(ctx context.Context, typ GuestType, node string, vmid int, since time.Time, request string, attempt int, cause error) (bool, error) {
	found, ok, err := c.findGuestTask(ctx, node, createTaskTypes[typ], vmid, since)
	if err != nil {
		return false, fmt.Errorf("%w (looking for its task failed too: %v)", cause, err)
	}
	if !ok {
		return false, nil
	}
	observe(ctx, TaskEvent{Phase: TaskFound, UPID: found, Request: request, Attempt: attempt, Err: cause})
	if _, err := c.WaitTask(ctx, found); err != nil {
		return true, err
	}
	_, err = c.GuestConfig(ctx, typ, node, vmid)
	switch {
	case err == nil:
		return true, nil
	case IsNotFound(err):
		return false, nil
	}
	return true, err
}

// passingServerError is a 500 that is not one of PVE's refusals: the API
// handler failed before it did anything (see above).
func passingServerError(err error) bool {
	var api *APIError
	if !errors.As(err, &api) || api.Status != http.StatusInternalServerError {
		return false
	}
	return !IsNotFound(err) && !vmidTaken(err) && !IsLockTimeout(err)
}

// vmidTaken is PVE's refusal of a create whose vmid is in use
// (PVE::Cluster::check_vmid_unused: "VM N already exists", "CT N already
// exists").
func vmidTaken(err error) bool {
	var api *APIError
	return errors.As(err, &api) && strings.Contains(api.Message, "already exists")
}

// findGuestTask looks, among node's tasks of type typ for vmid started by
// this client's user since a moment before sent (on PVE's clock), for the
// newest one.
func (c *Client) findGuestTask(ctx context.Context, node, typ string, vmid int, sent time.Time) (UPID, bool, error) {
	own, err := c.ownTasks(ctx, node, typ, vmid, sent)
	if err != nil || len(own) == 0 {
		return UPID{}, false, err
	}
	best := own[0]
	for _, u := range own[1:] {
		if u.StartTime > best.StartTime {
			best = u
		}
	}
	return best, true, nil
}

// ownTasks lists node's tasks of type typ whose id is vmid, started by
// this client's token since a moment before sent (on PVE's clock), as
// GET /nodes/{node}/tasks filters them (pve-manager PVE/API2/Tasks.pm
// node_tasks: vmid, typefilter, userfilter, since; source=all takes the
// running ones too).
func (c *Client) ownTasks(ctx context.Context, node, typ string, vmid int, sent time.Time) ([]UPID, error) {
	return c.ownTasksOf(ctx, node, typ, strconv.Itoa(vmid), true, sent)
}

// ownTasksOf is ownTasks for a task id that is not a vmid (byVMID false:
// the list cannot filter by it, pvectl does).
func (c *Client) ownTasksOf(ctx context.Context, node, typ, id string, byVMID bool, sent time.Time) ([]UPID, error) {
	user, token, _ := strings.Cut(c.cfg.tokenID, "!")
	q := url.Values{
		"source":     {"all"},
		"typefilter": {typ},
		"since":      {strconv.FormatInt(sent.Add(-taskClockSlack).Unix(), 10)},
		"limit":      {"50"},
	}
	if byVMID {
		q.Set("vmid", id)
	}
	if user != "" {
		q.Set("userfilter", user)
	}
	var rows []struct {
		UPID    string `json:"upid"`
		User    string `json:"user"`
		TokenID string `json:"tokenid"`
	}
	if err := c.Do(ctx, http.MethodGet, apiPath("nodes", node, "tasks"), q, &rows); err != nil {
		return nil, err
	}
	var out []UPID
	for _, r := range rows {
		u, err := ParseUPID(r.UPID)
		if err != nil || u.Type != typ || u.ID != id {
			continue
		}
		// The task's user is the token ("user@realm!name"), whether PVE
		// lists it whole or split into user and tokenid.
		if c.cfg.tokenID != "" && u.User != c.cfg.tokenID && !(r.User == user && r.TokenID == token) {
			continue
		}
		out = append(out, u)
	}
	return out, nil
}

// taskClockSlack is how far before the send a task may seem to have
// started: PVE's clock is known from the Date header to the second,
// and task start times are whole seconds.
const taskClockSlack = 2 * time.Second

// clock keeps the offset of PVE's clock (its answers' Date header) from
// ours, so that "since the request was sent" can be asked on PVE's terms.
type clock struct{ offset atomic.Int64 } // nanoseconds, PVE − local

func (k *clock) observe(date string) {
	if date == "" {
		return
	}
	t, err := http.ParseTime(date)
	if err != nil {
		return
	}
	k.offset.Store(int64(time.Until(t)))
}

// serverNow is the current time on PVE's clock, as far as known.
func (c *Client) serverNow() time.Time {
	return time.Now().Add(time.Duration(c.clock.offset.Load()))
}

// guestTaskOf names the task a guest call starts, for the calls
// RunIdempotentTask sends whose task PVE names after the guest (the
// fork_worker calls of qemu-server PVE/API2/Qemu.pm and pve-container
// src/PVE/API2/LXC.pm, LXC/Status.pm): destroy, power actions, a VM's
// config update, template, resize. A clone's task is named after its
// source, which several clones share: not found this way.
func guestTaskOf(method, path string) (node, typ string, vmid int, ok bool) {
	seg := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(seg) < 4 || seg[0] != "nodes" {
		return "", "", 0, false
	}
	prefix := map[string]string{"qemu": "qm", "lxc": "vz"}[seg[2]]
	id, err := strconv.Atoi(seg[3])
	if prefix == "" || err != nil {
		return "", "", 0, false
	}
	rest := strings.Join(seg[4:], "/")
	switch {
	case method == http.MethodDelete && rest == "":
		typ = prefix + "destroy"
	case method == http.MethodPost && strings.HasPrefix(rest, "status/"):
		action := strings.TrimPrefix(rest, "status/")
		if !powerActions[action] {
			return "", "", 0, false
		}
		typ = prefix + action
	case method == http.MethodPost && rest == "config" && seg[2] == "qemu":
		typ = "qmconfig"
	case method == http.MethodPost && rest == "template":
		typ = prefix + "template"
	case method == http.MethodPut && rest == "resize":
		typ = "resize"
	default:
		return "", "", 0, false
	}
	return seg[1], typ, id, true
}

// ServerNow is the current time on PVE's clock, as far as its answers'
// Date headers tell (the run lock's lease is kept on PVE's clock, which
// every run that reads it shares).
func (c *Client) ServerNow() time.Time { return c.serverNow() }
