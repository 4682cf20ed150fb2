package planner

// Rule order without open windows (issue 20 item 2). A firewall's rules
// are an ordered list PVE addresses by position only (pve-firewall
// API2/Firewall/Rules.pm): POST puts a new rule at the top (unshift, and
// disabled unless `enable` is given), PUT {pos} moveto=N moves one rule,
// PUT {pos} with fields edits it in place, DELETE {pos} removes it. Tools
// that delete and re-create rules to reorder them leave the set open or
// shut for a while; pvectl plans the fewest moves instead, and never
// removes a rule the spec keeps.
//
// The order of writes:
//  1. inserts: each new rule is created disabled (so its place at the
//     top matters to no packet), in reverse spec order;
//  2. moves: the rules outside one longest run already in spec order
//     (a longest increasing subsequence) move, each once, next to their
//     spec predecessor — the fewest single-rule moves there are;
//  3. edits in place: changed rules get their new fields, new rules are
//     enabled (now that they are in their place);
//  4. deletes: rules the spec does not list go last, bottom first.

// ruleOpKind is what one write does.
type ruleOpKind int

const (
	ruleInsert ruleOpKind = iota // POST: new rule at the top, disabled
	ruleMove                     // PUT {pos} moveto
	ruleEdit                     // PUT {pos} with the rule's fields
	ruleDelete                   // DELETE {pos}
)

// ruleOp is one write of a reorder, with the position it is sent for
// (the list as the writes before it left it).
type ruleOp struct {
	Kind ruleOpKind `json:"kind"`
	// Pos is the rule's position when the write is sent (0 for inserts).
	Pos int `json:"pos"`
	// MoveTo is PVE's moveto: the rule goes before the rule that is at
	// MoveTo now (so it lands at MoveTo-1 when it moves down), or to the
	// end when MoveTo is at least the list's length.
	MoveTo int `json:"moveto,omitempty"`
	// Want is the rule's index in the desired list (inserts and edits);
	// -1 for a delete.
	Want int `json:"want"`
	// Enable marks an edit that only enables a newly inserted rule.
	Enable bool `json:"enable,omitempty"`
}

// ruleItem is one rule of the list while a reorder runs: want is its
// index in the desired list, -1 for a rule that goes.
type ruleItem struct{ want int }

// ruleSource says where a desired rule comes from in the live list.
type ruleSource struct {
	live    int  // live index, -1 for a new rule
	changed bool // an edited live rule (its content differs)
}

// matchRules pairs desired rules with live ones: equal rules first (in
// order, so duplicates keep their relative order), then the remaining
// ones in order as edits in place; what is left of desired is new, what
// is left of live goes.
func matchRules(live, want []string) []ruleSource {
	src := make([]ruleSource, len(want))
	used := make([]bool, len(live))
	for j, w := range want {
		src[j] = ruleSource{live: -1}
		for i, l := range live {
			if !used[i] && l == w {
				src[j], used[i] = ruleSource{live: i}, true
				break
			}
		}
	}
	next := 0
	for j := range want {
		if src[j].live >= 0 {
			continue
		}
		for next < len(live) && used[next] {
			next++
		}
		if next == len(live) {
			break
		}
		src[j], used[next] = ruleSource{live: next, changed: true}, true
	}
	return src
}

// planRuleOrder returns the writes that turn the live rule list into the
// desired one, each rule given as its canonical text (equal text = equal
// rule), and where each desired rule comes from.
func planRuleOrder(live, want []string) ([]ruleOp, []ruleSource) {
	src := matchRules(live, want)
	items := make([]ruleItem, len(live))
	for i := range items {
		items[i] = ruleItem{want: -1}
	}
	var ops []ruleOp
	for j, s := range src {
		if s.live >= 0 {
			items[s.live].want = j
		}
	}
	// 1. Inserts, last desired first: each goes to the top, so the new
	// rules stand in spec order above the old ones.
	for j := len(want) - 1; j >= 0; j-- {
		if src[j].live < 0 {
			ops = append(ops, ruleOp{Kind: ruleInsert, Want: j})
			items = append([]ruleItem{{want: j}}, items...)
		}
	}
	// 2. Moves.
	var moves []ruleOp
	items, moves = planMoves(items, len(want))
	ops = append(ops, moves...)
	// 3. Edits in place, at their final places.
	pos := positions(items)
	for j, s := range src {
		switch {
		case s.changed:
			ops = append(ops, ruleOp{Kind: ruleEdit, Pos: pos[j], Want: j})
		case s.live < 0:
			ops = append(ops, ruleOp{Kind: ruleEdit, Pos: pos[j], Want: j, Enable: true})
		}
	}
	// 4. Deletes, bottom first so that the positions above stay.
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].want < 0 {
			ops = append(ops, ruleOp{Kind: ruleDelete, Pos: i, Want: -1})
		}
	}
	return ops, src
}

// positions maps a desired index to its position in items.
func positions(items []ruleItem) map[int]int {
	pos := map[int]int{}
	for i, it := range items {
		if it.want >= 0 {
			pos[it.want] = i
		}
	}
	return pos
}

// planMoves moves the kept rules outside a longest increasing run, in
// desired order, each right after its desired predecessor (the first to
// the top); rules that go stay where they are. It returns the list as
// the moves leave it.
func planMoves(items []ruleItem, n int) ([]ruleItem, []ruleOp) {
	fixed := longestRun(items)
	var ops []ruleOp
	for j := range n {
		if fixed[j] {
			continue
		}
		from := indexOfWant(items, j)
		rest := append(append([]ruleItem{}, items[:from]...), items[from+1:]...)
		to := 0
		if j > 0 {
			to = indexOfWant(rest, j-1) + 1
		}
		if to == from {
			continue
		}
		moveTo := to
		if to > from {
			moveTo = to + 1 // PVE inserts before the rule at moveto, counted before the move
		}
		ops = append(ops, ruleOp{Kind: ruleMove, Pos: from, MoveTo: moveTo, Want: j})
		items = append(rest[:to:to], append([]ruleItem{items[from]}, rest[to:]...)...)
	}
	return items, ops
}

func indexOfWant(items []ruleItem, want int) int {
	for i, it := range items {
		if it.want == want {
			return i
		}
	}
	return -1
}

// longestRun marks the desired indexes of one longest subsequence of the
// kept items that is already in desired order (patience sorting,
// O(n log n)).
func longestRun(items []ruleItem) map[int]bool {
	var seq []int
	for _, it := range items {
		if it.want >= 0 {
			seq = append(seq, it.want)
		}
	}
	tails := []int{}              // index into seq of the smallest tail of each length
	prev := make([]int, len(seq)) // predecessor index into seq
	for i, v := range seq {
		lo, hi := 0, len(tails)
		for lo < hi {
			mid := (lo + hi) / 2
			if seq[tails[mid]] < v {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		prev[i] = -1
		if lo > 0 {
			prev[i] = tails[lo-1]
		}
		if lo == len(tails) {
			tails = append(tails, i)
		} else {
			tails[lo] = i
		}
	}
	out := map[int]bool{}
	if len(tails) == 0 {
		return out
	}
	for i := tails[len(tails)-1]; i >= 0; i = prev[i] {
		out[seq[i]] = true
	}
	return out
}

// applyRuleOp performs op on a list of rule texts the way PVE does
// (Rules.pm), for tests and for checking a live list against what the
// writes so far should have made; insert is the new rule's text.
func applyRuleOp(list []string, op ruleOp, text string) []string {
	switch op.Kind {
	case ruleInsert:
		return append([]string{text}, list...)
	case ruleMove:
		if op.MoveTo == op.Pos {
			return list
		}
		var out []string
		for i := range list {
			if i == op.Pos {
				continue
			}
			if i == op.MoveTo {
				out = append(out, list[op.Pos])
			}
			out = append(out, list[i])
		}
		if op.MoveTo >= len(list) {
			out = append(out, list[op.Pos])
		}
		return out
	case ruleEdit:
		out := append([]string{}, list...)
		out[op.Pos] = text
		return out
	case ruleDelete:
		return append(append([]string{}, list[:op.Pos]...), list[op.Pos+1:]...)
	}
	return list
}
