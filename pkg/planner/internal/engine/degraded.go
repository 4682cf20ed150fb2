package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Degraded clusters. A node that is offline (/cluster/resources and
// /nodes say so: pve-manager API2Tools.pm extract_node_stats) or that
// pveproxy cannot reach (it answers a call proxied there with 595 and
// the connect error, pve-http-server APIServer/AnyEvent.pm proxy_request)
// holds objects nobody can see or change now. What is on it, or may be,
// is "unknown": never absent (creating it would make a second one once
// the node is back), never changed. The plan covers the rest and lists
// the unknown as not planned; apply applies the rest and fails naming
// them (docs/decisions.md).

// NotPlanned is a resource the plan leaves out because its live state
// cannot be known now.
type NotPlanned struct {
	Address string `json:"address"`
	Reason  string `json:"reason"`
}

// String is the line plan and apply show.
func (n NotPlanned) String() string { return n.Address + ": " + n.Reason + " — not planned" }

// unknownError is an observation that could not tell whether the object
// exists or how it is: its node cannot be reached.
type unknownError struct{ reason string }

func (e *unknownError) Error() string { return e.reason + " — not planned" }

func Unknown(format string, args ...any) error {
	return &unknownError{reason: fmt.Sprintf(format, args...)}
}

// noteDownNodes records the nodes /cluster/resources reports offline.
func (lc *LiveConn) noteDownNodes() {
	for _, row := range lc.Resources {
		if row.Type == "node" && row.Status == "offline" {
			lc.MarkDown(row.Node, "which is offline")
		}
	}
}

func (lc *LiveConn) MarkDown(node, why string) {
	if lc.Down == nil {
		lc.Down = map[string]string{}
	}
	if _, known := lc.Down[node]; !known {
		lc.Down[node] = why
	}
}

// IsUnreachable: pveproxy could not reach the node the call was for.
func IsUnreachable(err error) bool {
	var ae *pve.APIError
	return errors.As(err, &ae) && ae.Status == 595
}

// UnreachableWhy says how a node failed to answer.
func UnreachableWhy(err error) string {
	var ae *pve.APIError
	if errors.As(err, &ae) && strings.TrimSpace(ae.Message) != "" {
		return fmt.Sprintf("which cannot be reached (595 %s)", strings.TrimSpace(ae.Message))
	}
	return "which cannot be reached (595)"
}

// downNodeOf is the node r is bound to (its spec's, else the one it would
// be made on) when that node is down, with why; "" otherwise.
func (lc *LiveConn) downNodeOf(r *spec.Resource) (string, string) {
	n := ParamNode(r)
	if n == "" {
		return "", ""
	}
	return n, lc.Down[n]
}

// downReason says, before a resource is read, why it cannot be: its
// spec's node is down ("" when it may be read).
func (lc *LiveConn) downReason(r *spec.Resource) string {
	if node, why := lc.downNodeOf(r); why != "" {
		return fmt.Sprintf("on node %s, %s", node, why)
	}
	return ""
}

// asUnknown turns a read that failed because a node could not be reached
// into an unknown; other errors stay as they are.
func (lc *LiveConn) asUnknown(r *spec.Resource, err error) error {
	var ue *unknownError
	if err == nil || errors.As(err, &ue) || !IsUnreachable(err) {
		return err
	}
	node := ParamNode(r)
	if node == "" {
		node, _ = lc.Node(r)
	}
	why := UnreachableWhy(err)
	if node != "" {
		lc.MarkDown(node, why)
		return Unknown("on node %s, %s", node, why)
	}
	return Unknown("its node %s", strings.TrimPrefix(why, "which "))
}

// StaleName: a down node's guest row without its real name. PVE lists
// one without status data with no name, and one whose status data was
// taken while it had no name yet (a create in progress) as "VM N"
// (qemu-server vmstatus, pve-container vmstatus).
func StaleName(row pve.ClusterResource) bool {
	return row.Name == "" || row.Name == fmt.Sprintf("VM %d", row.VMID) || row.Name == fmt.Sprintf("CT%d", row.VMID)
}

// notPlanned takes out of sel the unknown resources and whatever depends
// on them (a change needing an object whose state is unknown cannot be
// planned either), returning them with their reasons, in address order.
func NotPlannedOf(unseen map[string]string, sel map[string]bool, deps map[string][]string) []NotPlanned {
	out := map[string]string{}
	for addr, why := range unseen {
		if sel[addr] {
			out[addr] = why
		}
	}
	// Dependents, to a fixed point (bounded: each round adds one at least).
	for range len(sel) {
		added := false
		for addr := range sel {
			if _, done := out[addr]; done {
				continue
			}
			for _, d := range deps[addr] {
				if _, gone := out[d]; gone {
					out[addr] = "depends on " + d + ", which is not planned"
					added = true
					break
				}
			}
		}
		if !added {
			break
		}
	}
	var list []NotPlanned
	for _, addr := range slices.Sorted(maps.Keys(out)) {
		delete(sel, addr)
		list = append(list, NotPlanned{Address: addr, Reason: out[addr]})
	}
	return list
}
