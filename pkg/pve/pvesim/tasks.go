package pvesim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// task is one PVE worker. Its effect runs when it ends, TaskDuration after
// it started, with s.mu held.
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
	vmids     []int // locks held while running
}

// taskFunc is a task's effect: extra log lines, or an error that fails it.
type taskFunc func(t *task) error

func lockTimeout(vmid int) *apiError {
	return fail(http.StatusInternalServerError, "can't lock file '/var/lock/qemu-server/lock-%d.conf' - got timeout", vmid)
}

func lockTimeoutCT(vmid int) *apiError {
	return fail(http.StatusInternalServerError, "can't lock file '/run/lock/lxc/pve-config-%d.lock' - got timeout", vmid)
}

// checkLock answers the lock-timeout 500 when a task holds vmid.
func (s *Server) checkLock(vmid int) error {
	if _, held := s.locks[vmid]; held {
		if v, ok := s.st.VMs[vmid]; ok && v.Type == "lxc" {
			return lockTimeoutCT(vmid)
		}
		return lockTimeout(vmid)
	}
	return nil
}

// startTask registers a worker and schedules its effect. vmids are locked
// until it ends. Called with s.mu held.
func (s *Server) startTask(node, typ, id string, vmids []int, fn taskFunc) string {
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
		User:      s.opts.TokenID,
		Running:   true,
		vmids:     vmids,
	}
	t.UPID = fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", node, t.PID, t.PStart, t.StartTime, typ, id, t.User)
	s.tasks[t.UPID] = t
	s.order = append(s.order, t.UPID)
	for _, v := range vmids {
		s.locks[v] = t.UPID
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		timer := time.NewTimer(s.opts.TaskDuration)
		defer timer.Stop()
		select {
		case <-s.done:
			return
		case <-timer.C:
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return
		}
		s.finishTask(t, fn)
	}()
	return t.UPID
}

func (s *Server) finishTask(t *task, fn taskFunc) {
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("internal simulator error: %v", p)
			}
		}()
		err = fn(t)
	}()
	for _, v := range t.vmids {
		if s.locks[v] == t.UPID {
			delete(s.locks, v)
		}
	}
	t.Running = false
	t.EndTime = time.Now().Unix()
	if err != nil {
		msg := strings.TrimSpace(err.Error())
		t.Exit = msg
		t.Log = append(t.Log, "TASK ERROR: "+msg)
	} else {
		t.Exit = "OK"
		t.Log = append(t.Log, "TASK OK")
	}
	s.saveLocked()
}

func (t *task) logf(format string, args ...any) {
	t.Log = append(t.Log, fmt.Sprintf(format, args...))
}

func (s *Server) findTask(q *request) (*task, error) {
	t, ok := s.tasks[q.vars["upid"]]
	if !ok || t.Node != q.vars["node"] {
		return nil, fail(http.StatusInternalServerError, "no such task")
	}
	return t, nil
}

func (t *task) row() map[string]any {
	m := map[string]any{
		"upid": t.UPID, "node": t.Node, "pid": t.PID, "pstart": t.PStart,
		"starttime": t.StartTime, "type": t.Type, "id": t.ID, "user": t.User,
	}
	return m
}

func (s *Server) taskStatus(q *request) (any, error) {
	t, err := s.findTask(q)
	if err != nil {
		return nil, err
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
	if len(lines) == 0 {
		lines = []string{"no content"}
	}
	out := []map[string]any{}
	for i := start; i < len(lines) && len(out) < limit; i++ {
		out = append(out, map[string]any{"n": i + 1, "t": lines[i]})
	}
	return withTop{data: out, top: map[string]any{"total": len(lines)}}, nil
}

func (s *Server) listTasks(q *request) (any, error) {
	node := q.vars["node"]
	source := q.get("source")
	if source == "" {
		source = "archive"
	}
	vmid := q.get("vmid")
	typ := q.get("typefilter")
	errorsOnly := q.bool("errors")
	start := max(q.int("start", 0), 0)
	limit := q.int("limit", 50)
	if limit <= 0 {
		limit = 50
	}
	out := []map[string]any{}
	skipped := 0
	// Newest first, as PVE lists its task index.
	for i := len(s.order) - 1; i >= 0 && len(out) < limit; i-- {
		t := s.tasks[s.order[i]]
		switch {
		case t.Node != node,
			source == "archive" && t.Running,
			source == "active" && !t.Running,
			vmid != "" && t.ID != vmid,
			typ != "" && t.Type != typ,
			errorsOnly && (t.Running || t.Exit == "OK"):
			continue
		}
		if skipped < start {
			skipped++
			continue
		}
		m := t.row()
		if !t.Running {
			m["status"] = t.Exit
			m["endtime"] = t.EndTime
		}
		out = append(out, m)
	}
	return out, nil
}

func vmidString(id int) string { return strconv.Itoa(id) }
