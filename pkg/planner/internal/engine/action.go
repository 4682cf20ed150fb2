package engine

import "fmt"

// FormatVersion is the version of the plan and plan-JSON formats.
const FormatVersion = "1"

var actionNames = map[Action]string{
	NoOp:      "noop",
	Create:    "create",
	Update:    "update",
	Replace:   "replace",
	Delete:    "delete",
	Provision: "provision",
	ApplyNet:  "apply",
}

// String is the action's JSON name ("create", "update", …, "apply").
func (a Action) String() string {
	if n, ok := actionNames[a]; ok {
		return n
	}
	return fmt.Sprintf("Action(%q)", rune(a))
}

// ParseAction maps a JSON name back to its Action.
func ParseAction(name string) (Action, error) {
	for a, n := range actionNames {
		if n == name {
			return a, nil
		}
	}
	return 0, fmt.Errorf("unknown action %q", name)
}

// IsReplace reports whether the action destroys and recreates the object.
func (a Action) IsReplace() bool { return a == Replace }

// Symbol is the marker the human plan shows: "+", "~", "-/+", "-", ">", "!".
func (a Action) Symbol() string {
	switch a {
	case Replace:
		return "-/+"
	case NoOp:
		return " "
	}
	return string(a)
}

// Symbol is the change's marker: its action's, but "+/-" for a replace
// that creates the new object before it destroys the old one.
func (c *Change) Symbol() string {
	if c.Action == Replace && c.CreateFirst {
		return "+/-"
	}
	return c.Action.Symbol()
}

// Summary counts the plan's changes per action.
func (p *Plan) Summary() Summary {
	var s Summary
	for _, c := range p.Changes {
		switch c.Action {
		case Create:
			s.Create++
		case Update:
			s.Update++
		case Replace:
			s.Replace++
		case Delete:
			s.Delete++
		case Provision:
			s.Provision++
		case ApplyNet:
			s.Apply++
		default:
			s.NoOp++
		}
	}
	return s
}

// HasChanges reports whether applying the plan would do anything.
func (p *Plan) HasChanges() bool {
	for _, c := range p.Changes {
		if c.Action != NoOp {
			return true
		}
	}
	return false
}

// Change returns the change for addr, or nil.
func (p *Plan) Change(addr string) *Change {
	for _, c := range p.Changes {
		if c.Address == addr {
			return c
		}
	}
	return nil
}
