package planner

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// permutations returns every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

func permKey(p []int) string { return fmt.Sprint(p) }

// moveDistances is, for every order of n rules, the fewest single-rule
// moves that sort it, found by breadth-first search over all orders (a
// move's inverse is a move, so the distance from the sorted order is the
// distance to it).
func moveDistances(n int) map[string]int {
	start := make([]int, n)
	for i := range start {
		start[i] = i
	}
	dist := map[string]int{permKey(start): 0}
	queue := [][]int{start}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for from := range n {
			rest := append(append([]int{}, p[:from]...), p[from+1:]...)
			for to := 0; to < n; to++ {
				q := append(append(append([]int{}, rest[:to]...), p[from]), rest[to:]...)
				if _, seen := dist[permKey(q)]; !seen {
					dist[permKey(q)] = dist[permKey(p)] + 1
					queue = append(queue, q)
				}
			}
		}
	}
	return dist
}

func ruleName(i int) string { return fmt.Sprintf("r%d", i) }

// runRuleOps applies ops to live the way PVE does and checks, after every
// write, that each rule both lists have is still there.
func runRuleOps(t *testing.T, live, want []string, ops []ruleOp) []string {
	t.Helper()
	var kept []string
	for _, w := range want {
		if slices.Contains(live, w) {
			kept = append(kept, w)
		}
	}
	list := slices.Clone(live)
	for k, op := range ops {
		text := ""
		if op.Want >= 0 {
			text = want[op.Want]
		}
		if op.Kind == ruleMove || op.Kind == ruleEdit || op.Kind == ruleDelete {
			if op.Pos < 0 || op.Pos >= len(list) {
				t.Fatalf("live %v want %v: op %d %+v: position out of the list %v", live, want, k, op, list)
			}
		}
		if op.Kind == ruleMove && (op.MoveTo < 0 || op.MoveTo > len(list)) {
			t.Fatalf("live %v want %v: op %d %+v: moveto out of range of %v", live, want, k, op, list)
		}
		if op.Kind == ruleDelete && slices.Contains(kept, list[op.Pos]) && countOf(list, list[op.Pos]) <= countOf(want, list[op.Pos]) {
			t.Fatalf("live %v want %v: op %d deletes kept rule %s", live, want, k, list[op.Pos])
		}
		list = applyRuleOp(list, op, text)
		for _, r := range kept {
			if !slices.Contains(list, r) {
				t.Fatalf("live %v want %v: after op %d %+v kept rule %s is missing: %v", live, want, k, op, r, list)
			}
		}
	}
	return list
}

func countOf(list []string, s string) int {
	return countWhere(list, func(x string) bool { return x == s })
}

func countKind(ops []ruleOp, kind ruleOpKind) int {
	return countWhere(ops, func(op ruleOp) bool { return op.Kind == kind })
}

// TestRuleOrderEveryPermutation: every reordering of up to 6 rules is
// planned as the fewest moves (checked against a breadth-first search),
// with no insert, edit or delete, and ends in the spec's order.
func TestRuleOrderEveryPermutation(t *testing.T) {
	for n := 0; n <= 6; n++ {
		dist := moveDistances(n)
		want := make([]string, n)
		for i := range want {
			want[i] = ruleName(i)
		}
		for _, p := range permutations(n) {
			live := make([]string, n)
			for i, v := range p {
				live[i] = ruleName(v)
			}
			ops, _ := planRuleOrder(live, want)
			if got := countKind(ops, ruleMove); got != dist[permKey(p)] || len(ops) != got {
				t.Fatalf("live %v: %d moves in %d writes %+v, want %d moves only", live, got, len(ops), ops, dist[permKey(p)])
			}
			if got := runRuleOps(t, live, want, ops); !slices.Equal(got, want) {
				t.Fatalf("live %v: ops %+v end in %v, want %v", live, ops, got, want)
			}
		}
	}
}

// TestRuleOrderInsertsAndDeletes: every order of up to 5 live rules, each
// subset of them dropped from the spec and a new rule at every place:
// the writes end in the spec's list, never remove a kept rule, move a
// kept rule only as often as the fewest moves need, and delete last.
func TestRuleOrderInsertsAndDeletes(t *testing.T) {
	cases := 0
	for n := 0; n <= 5; n++ {
		for _, p := range permutations(n) {
			live := make([]string, n)
			for i, v := range p {
				live[i] = ruleName(v)
			}
			for mask := 0; mask < 1<<n; mask++ {
				var kept []string
				for i := range n {
					if mask&(1<<i) == 0 {
						kept = append(kept, ruleName(i))
					}
				}
				for at := 0; at <= len(kept); at++ {
					want := append(append(append([]string{}, kept[:at]...), "new"), kept[at:]...)
					ops, _ := planRuleOrder(live, want)
					cases++
					checkRuleOps(t, live, want, ops)
				}
			}
		}
	}
	if cases < 1000 {
		t.Fatalf("only %d cases ran", cases)
	}
}

func checkRuleOps(t *testing.T, live, want []string, ops []ruleOp) {
	t.Helper()
	got := runRuleOps(t, live, want, ops)
	if !slices.Equal(got, want) {
		t.Fatalf("live %v want %v: ops %+v end in %v", live, want, ops, got)
	}
	seenDelete := false
	for _, op := range ops {
		if op.Kind == ruleDelete {
			seenDelete = true
		} else if seenDelete {
			t.Fatalf("live %v want %v: a write after a delete: %+v", live, want, ops)
		}
	}
	// The kept rules' moves are at most the fewest that order them, and
	// every other rule (new or edited) moves at most once.
	var order []int
	for _, l := range live {
		if i := slices.Index(want, l); i >= 0 {
			order = append(order, i)
		}
	}
	kept := len(order)
	lis := len(longestRun(itemsOf(order)))
	moves := countKind(ops, ruleMove)
	if others := len(want) - kept; moves > kept-lis+others {
		t.Fatalf("live %v want %v: %d moves, more than %d (kept rules out of order) + %d (new or edited rules)", live, want, moves, kept-lis, others)
	}
}

func itemsOf(order []int) []ruleItem {
	out := make([]ruleItem, len(order))
	for i, w := range order {
		out[i] = ruleItem{want: w}
	}
	return out
}

// TestRuleOrderTable pins a few plans write by write.
func TestRuleOrderTable(t *testing.T) {
	tests := []struct {
		name       string
		live, want string
		ops        string
	}{
		{"same", "a b c", "a b c", ""},
		{"swap two", "a b", "b a", "move 0→2"},
		{"last to top", "a b c", "c a b", "move 2→0"},
		{"top to bottom", "a b c", "b c a", "move 0→3"},
		{"edit in place", "a b c", "a x c", "edit 1"},
		{"insert in the middle", "a c", "a b c", "insert; move 0→2; enable 1"},
		{"insert at the top", "b c", "a b c", "insert; enable 0"},
		{"delete", "a b c", "a c", "delete 1"},
		{"duplicates keep their order", "a a b", "b a a", "move 2→0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live, want := strings.Fields(tt.live), strings.Fields(tt.want)
			ops, _ := planRuleOrder(live, want)
			var got []string
			for _, op := range ops {
				switch {
				case op.Kind == ruleInsert:
					got = append(got, "insert")
				case op.Kind == ruleMove:
					got = append(got, fmt.Sprintf("move %d→%d", op.Pos, op.MoveTo))
				case op.Kind == ruleEdit && op.Enable:
					got = append(got, fmt.Sprintf("enable %d", op.Pos))
				case op.Kind == ruleEdit:
					got = append(got, fmt.Sprintf("edit %d", op.Pos))
				case op.Kind == ruleDelete:
					got = append(got, fmt.Sprintf("delete %d", op.Pos))
				}
			}
			if s := strings.Join(got, "; "); s != tt.ops {
				t.Errorf("planRuleOrder(%v, %v) = %q, want %q", live, want, s, tt.ops)
			}
			checkRuleOps(t, live, want, ops)
		})
	}
}
