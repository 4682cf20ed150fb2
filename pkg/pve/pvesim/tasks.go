package pvesim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// upidFormat is PVE's UPID syntax (PVE::Tools::upid_decode).
var upidFormat = lazyre.New(`^UPID:([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s/]+):([^:\s/]*):([^:\s/]+):$`)

// task is one PVE worker. Its effect runs when it ends, TaskDuration after
// it got its locks, with s.mu held.
type task struct {
	UPID      string
	Node      string
	PID       uint32
	PStart    uint64
	StartTime int64
	Type      string
	ID        string
	User      string
	EndTime   int64
	Running   bool
	Exit      string
	Log       []string
	Warnings  int
	vmids     []int     // exclusive locks held while running
	shared    []int     // shared locks held while running (clone source)
	started   time.Time // for the window in which its status is not readable yet
}

// taskFunc is a task's effect: extra log lines, or an error that fails it.
type taskFunc func(t *task) error

// worker is what a task does: the locks its forked worker takes first
// (each waited for like PVE's lock_file_full), the checks PVE repeats
// once it holds them, and the effect when it ends.
type worker struct {
	locks []lockReq
	// begin runs as soon as the locks are held (at once when they were
	// free): PVE's checks under the lock, and what the worker writes first
	// (a clone target's temporary config). An error fails the task.
	begin taskFunc
	// abort cleans up when the locks could not be taken (a create removes
	// its stub, as qemu-server's create worker unlinks the config).
	abort func()
	// run is the effect, TaskDuration after the locks were taken.
	run taskFunc
	// uncontended: the call rolled its injected lock contention at a lock
	// taken in the API process already (create).
	uncontended bool
	// lockFailed, when set, turns a lock the worker could not get into
	// the task's error (a migration reports it as aborted).
	lockFailed func(t *task, err error) error
	// user runs the task ("" = the caller's token).
	user string
}

// startTask registers a worker that locks vmids exclusively (lock_config)
// and runs fn when it ends. Called with s.mu held.
func (s *Server) startTask(node, typ, id string, vmids []int, fn taskFunc) string {
	w := worker{run: fn}
	for _, v := range vmids {
		w.locks = append(w.locks, s.exclusive(v))
	}
	return s.startWorker(node, typ, id, w).UPID
}

// startWorker registers a task and starts its worker. Called with s.mu held.
func (s *Server) startWorker(node, typ, id string, w worker) *task {
	s.nextPID++
	now := time.Now()
	boot := s.st.Boot[node]
	if boot == 0 || boot > now.Unix() {
		boot = now.Unix() - 3600
	}
	t := &task{
		Node:      node,
		PID:       s.nextPID,
		PStart:    uint64(now.Unix()-boot)*100 + uint64(s.rng.IntN(100)), // jiffies since boot
		StartTime: now.Unix(),
		Type:      typ,
		ID:        id,
		User:      s.taskUser(),
		Running:   true,
		started:   now,
	}
	if w.user != "" {
		t.User = w.user
	}
	t.UPID = fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", node, t.PID, t.PStart, t.StartTime, typ, id, t.User)
	s.tasks[t.UPID] = t
	s.order = append(s.order, t.UPID)
	phantom := len(w.locks) > 0 && !w.uncontended && s.contended()
	held := !phantom && s.tryLocks(t, w.locks)
	gate := s.taskGate
	if held && !s.begin(t, w) {
		return t
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if !held {
			s.mu.Lock()
			err := s.takeLocks(t, w.locks, phantom)
			if err == nil && !s.begin(t, w) {
				err = errEnded
			}
			if err != nil {
				if !errors.Is(err, errClosed) && !errors.Is(err, errEnded) {
					if w.abort != nil {
						w.abort()
					}
					if w.lockFailed != nil {
						err = w.lockFailed(t, err)
					}
					s.endTask(t, err)
				}
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
		}
		timer := time.NewTimer(s.opts.TaskDuration)
		defer timer.Stop()
		select {
		case <-s.done:
			return
		case <-timer.C:
		}
		if gate != nil {
			select {
			case <-s.done:
				return
			case <-gate:
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return
		}
		s.endTask(t, w.run(t))
	}()
	return t
}

// taskUser is who a new task runs as: the token of the request that
// starts it.
func (s *Server) taskUser() string {
	if s.reqUser != "" {
		return s.reqUser
	}
	return s.opts.TokenID
}

// errEnded: begin failed the task already.
var errEnded = errors.New("task ended")

// begin runs the worker's first step under its locks; false when it
// failed the task.
func (s *Server) begin(t *task, w worker) bool {
	if w.begin == nil {
		return true
	}
	if err := w.begin(t); err != nil {
		s.endTask(t, err)
		return false
	}
	return true
}

// endTask records the task's end and releases its locks. A panic in an
// effect is a simulator bug: it ends the process (and the test binary)
// with its stack instead of passing for a plausible PVE task error.
func (s *Server) endTask(t *task, err error) {
	s.unlockTask(t)
	t.Running = false
	t.EndTime = time.Now().Unix()
	if err == nil && s.opts.WarnRate > 0 && s.rng.Float64() < s.opts.WarnRate {
		t.warn("simulated warning: the task succeeded with a complaint")
	}
	switch {
	case err != nil:
		msg := strings.TrimSpace(err.Error())
		t.Exit = msg
		t.Log = append(t.Log, "TASK ERROR: "+msg)
	case t.Warnings > 0:
		// PVE's worker exit status for success with warn() calls: not a failure.
		t.Exit = fmt.Sprintf("WARNINGS: %d", t.Warnings)
		t.Log = append(t.Log, "TASK "+t.Exit)
	default:
		t.Exit = "OK"
		t.Log = append(t.Log, "TASK OK")
	}
	s.saveLocked()
}

func (t *task) logf(format string, args ...any) {
	t.Log = append(t.Log, fmt.Sprintf(format, args...))
}

// warn is a worker's warn(): a "WARN: " log line that turns a successful
// exit status into "WARNINGS: n".
func (t *task) warn(format string, args ...any) {
	t.Warnings++
	t.Log = append(t.Log, "WARN: "+fmt.Sprintf(format, args...))
}

func (s *Server) taskRoutes() []route {
	return []route{
		r("GET /nodes/{node}/tasks", s.listTasks),
		r("GET /nodes/{node}/tasks/{upid}/status", s.taskStatus).withNoFault(),
		r("GET /nodes/{node}/tasks/{upid}/log", s.taskLog).withNoFault(),
	}
}

// findTask resolves the request's UPID as pveproxy does: 400 when it does not
// parse or when its task file does not exist (yet).
func (s *Server) findTask(q *request) (*task, error) {
	upid := q.vars["upid"]
	if !upidFormat.MatchString(upid) {
		return nil, paramErr1("upid", "unable to parse worker upid")
	}
	t, ok := s.tasks[upid]
	if !ok || t.Node != q.vars["node"] {
		return nil, paramErr1("upid", "no such task")
	}
	// Another's task needs Sys.Audit on the node (pve-manager
	// API2/Tasks.pm read_task_status, read_task_log).
	if !taskOwner(t.User, q.user) {
		if err := s.check(q.user, "/nodes/"+q.vars["node"], "Sys.Audit"); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// taskOwner is Tasks.pm's $check_task_user: a token sees its own tasks, a
// user its own and its tokens'.
func taskOwner(taskUser, caller string) bool {
	if owner, _, isToken := splitTokenID(taskUser); isToken {
		return caller == taskUser || caller == owner
	}
	return caller == taskUser
}

// unborn reports whether the task is still inside the injected window
// (Options.TaskStatusDelay) in which its task file seems missing: the status
// call answers 400 then. PVE writes the file before it answers the UPID.
func (s *Server) unborn(t *task) bool {
	return t.Running && time.Since(t.started) < s.opts.TaskStatusDelay
}

// row is the task as the status and list calls answer it. A token's task
// names the user and the token apart (pve-manager PVE/API2/Tasks.pm
// convert_token_task: split_tokenid), although its UPID holds "user!token".
func (t *task) row() map[string]any {
	m := map[string]any{
		"upid": t.UPID, "node": t.Node, "pid": t.PID, "pstart": t.PStart,
		"starttime": t.StartTime, "type": t.Type, "id": t.ID, "user": t.User,
	}
	if user, token, ok := strings.Cut(t.User, "!"); ok {
		m["user"], m["tokenid"] = user, token
	}
	return m
}

func (s *Server) taskStatus(q *request) (any, error) {
	t, err := s.findTask(q)
	if err != nil {
		return nil, err
	}
	if s.unborn(t) {
		return nil, paramErr1("upid", "no such task")
	}
	m := t.row()
	if t.Running {
		m["status"] = "running"
	} else {
		m["status"] = "stopped"
		m["exitstatus"] = t.Exit
	}
	return m, nil
}

func (s *Server) taskLog(q *request) (any, error) {
	t, err := s.findTask(q)
	if err != nil {
		return nil, err
	}
	start := max(q.int("start", 0), 0)
	limit := q.int("limit", 50)
	if limit <= 0 {
		limit = 50
	}
	lines := t.Log
	switch {
	case s.unborn(t):
		lines = []string{"unable to open file - No such file or directory"}
	case len(lines) == 0:
		lines = []string{"no content"}
	}
	out := []map[string]any{}
	for i := start; i < len(lines) && len(out) < limit; i++ {
		out = append(out, map[string]any{"n": i + 1, "t": lines[i]})
	}
	return withTop{data: out, top: map[string]any{"total": len(lines)}}, nil
}

// listTasks is GET /nodes/{node}/tasks as pve-manager PVE/API2/Tasks.pm
// node_tasks answers it: the active tasks first (source active or all;
// a running one has the status "RUNNING" and, not being converted yet,
// its token's full id as user), then the archive, newest first. A task is
// left out by userfilter (a case-insensitive substring of its user), the
// caller's right to see it (Sys.Audit on the node, else its own),
// typefilter (exact), vmid (the task's id), since/until (its start time)
// and its status type (statusfilter, or errors: every type but ok —
// pve-common PVE/UPID.pm normalize_status_type: no status is "unknown").
// start skips that many matches and limit (0 allowed: none) bounds the
// list; "total" counts every match.
func (s *Server) listTasks(q *request) (any, error) {
	f := s.taskFilter(q)
	start := max(q.int("start", 0), 0)
	limit := q.int("limit", 50)
	count := 0
	out := []map[string]any{}
	// keep is filter_task's tail: the match is counted, then start and
	// limit apply.
	keep := func(t *task) bool {
		if !f(t) {
			return false
		}
		count++
		return count > start && len(out) < limit
	}
	source := q.get("source")
	if source == "" {
		source = "archive"
	}
	if source == "active" || source == "all" {
		for i := len(s.order) - 1; i >= 0; i-- {
			if t := s.tasks[s.order[i]]; t.Running && keep(t) {
				m := t.row()
				m["user"] = t.User
				delete(m, "tokenid")
				m["status"] = "RUNNING"
				out = append(out, m)
			}
		}
	}
	if source != "active" {
		for i := len(s.order) - 1; i >= 0; i-- {
			if t := s.tasks[s.order[i]]; !t.Running && keep(t) {
				m := t.row()
				m["status"] = t.Exit
				m["endtime"] = t.EndTime
				out = append(out, m)
			}
		}
	}
	return withTop{data: out, top: map[string]any{"total": count}}, nil
}

// taskFilter is node_tasks' filter_task before start and limit: true for
// a task the list shows.
func (s *Server) taskFilter(q *request) func(t *task) bool {
	node := q.vars["node"]
	vmid, typ := q.get("vmid"), q.get("typefilter")
	userFilter := strings.ToLower(q.get("userfilter"))
	since, until := int64(q.int("since", 0)), int64(q.int("until", 0))
	_, hasSince := q.params["since"]
	_, hasUntil := q.params["until"]
	auditor := s.can(q.user, "/nodes/"+node, "Sys.Audit")
	types := map[string]bool{"ok": true, "warning": true, "error": true, "unknown": true}
	switch {
	case q.bool("errors"):
		types["ok"] = false
	case q.get("statusfilter") != "":
		types = map[string]bool{}
		for _, f := range strings.FieldsFunc(q.get("statusfilter"), func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\x00' }) {
			types[strings.ToLower(f)] = true
		}
	}
	return func(t *task) bool {
		// An archived token task is filtered as convert_token_task
		// left it: by the user alone.
		status, user := t.Exit, t.User
		if t.Running {
			status = ""
		} else {
			user, _, _ = strings.Cut(user, "!")
		}
		return t.Node == node &&
			(userFilter == "" || strings.Contains(strings.ToLower(user), userFilter)) &&
			(auditor || taskOwner(t.User, q.user)) &&
			(typ == "" || t.Type == typ) &&
			(vmid == "" || t.ID == vmid) &&
			(!hasSince || t.StartTime >= since) &&
			(!hasUntil || t.StartTime <= until) &&
			types[statusType(status)]
	}
}

// statusType is pve-common PVE/UPID.pm normalize_status_type.
func statusType(status string) string {
	switch {
	case status == "", status == "unexpected status":
		return "unknown"
	case status == "OK":
		return "ok"
	case taskWarningsRe.MatchString(status):
		return "warning"
	}
	return "error"
}

var taskWarningsRe = lazyre.New(`^WARNINGS: \d+$`)

func vmidString(id int) string { return strconv.Itoa(id) }
