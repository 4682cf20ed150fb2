// Package dag is the dependency graph the spec and the planner share:
// vertices are addresses ("Kind/name"), an edge points from a vertex to
// what it depends on. It orders (Kahn, ties by name), finds cycles
// (Tarjan, then the shortest cycle through each strongly connected
// component), reverses, and answers reachability. It knows nothing of
// kinds.
package dag

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Graph maps each vertex to the vertices it depends on.
type Graph struct {
	// Deps maps an address to the addresses it depends on (sorted).
	Deps map[string][]string
}

// Cycles returns one cycle per strongly connected component that has one,
// each starting and ending at the component's first member in file order
// (rank), e.g. [QemuVM/a Pool/b QemuVM/a]. Tarjan's algorithm, iterating in
// sorted order so the result is deterministic.
func (g *Graph) Cycles(rank map[string]int) [][]string {
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var sccs [][]string
	next := 0
	var strong func(v string)
	strong = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range g.Deps[v] {
			if len(g.Deps[w]) == 0 {
				continue // no way out of w: it is in no cycle, and leads to none
			}
			if _, seen := index[w]; !seen {
				strong(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var scc []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				scc = append(scc, w)
				if w == v {
					break
				}
			}
			sccs = append(sccs, scc)
		}
	}
	var from []string
	for v, deps := range g.Deps {
		if len(deps) > 0 {
			from = append(from, v)
		}
	}
	slices.Sort(from)
	for _, v := range from {
		if _, seen := index[v]; !seen {
			strong(v)
		}
	}
	var out [][]string
	for _, scc := range sccs {
		sort.Slice(scc, func(i, j int) bool { return rank[scc[i]] < rank[scc[j]] })
		if len(scc) == 1 && !slices.Contains(g.Deps[scc[0]], scc[0]) {
			continue
		}
		out = append(out, g.shortestCycle(scc[0], scc))
	}
	sort.Slice(out, func(i, j int) bool { return rank[out[i][0]] < rank[out[j][0]] })
	return out
}

// shortestCycle finds, by breadth-first search inside one component, the
// shortest path from start back to start.
func (g *Graph) shortestCycle(start string, scc []string) []string {
	in := map[string]bool{}
	for _, v := range scc {
		in[v] = true
	}
	prev := map[string]string{}
	queue := []string{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range g.Deps[v] {
			if !in[w] {
				continue
			}
			if w == start {
				path := []string{start}
				for u := v; u != start; u = prev[u] {
					path = append(path, u)
				}
				path = append(path, start)
				// path is start, v, …, back to start in reverse: flip the middle.
				for i, j := 1, len(path)-2; i < j; i, j = i+1, j-1 {
					path[i], path[j] = path[j], path[i]
				}
				return path
			}
			if _, seen := prev[w]; !seen && w != start {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return []string{start, start}
}

// Order is the topological order of the graph (dependencies first, ties by
// address); members of a cycle come last, sorted.
func (g *Graph) Order() []string {
	out, stuck := g.sorted(nil)
	return append(out, stuck...)
}

// OrderOf is Order restricted to the selected vertices (edges to others are
// ignored); a cycle among them is an error naming its members.
func (g *Graph) OrderOf(sel map[string]bool) ([]string, error) {
	out, stuck := g.sorted(sel)
	if len(stuck) > 0 {
		return nil, fmt.Errorf("dependency cycle among %v", stuck)
	}
	return out, nil
}

// sorted is Kahn's algorithm over the selected vertices (nil: all), ties
// by name; stuck lists, sorted, the vertices a cycle kept from the order.
func (g *Graph) sorted(sel map[string]bool) (out, stuck []string) {
	in := func(v string) bool {
		if sel == nil {
			_, ok := g.Deps[v]
			return ok
		}
		return sel[v]
	}
	waiting := map[string]int{}
	users := map[string][]string{}
	for _, v := range slices.Sorted(maps.Keys(g.Deps)) {
		if !in(v) {
			continue
		}
		waiting[v] += 0
		for _, d := range g.Deps[v] {
			if in(d) {
				waiting[v]++
				users[d] = append(users[d], v)
			}
		}
	}
	for v := range sel {
		if _, ok := g.Deps[v]; !ok {
			waiting[v] += 0 // a selected vertex without edges
		}
	}
	var ready []string
	for v, n := range waiting {
		if n == 0 {
			ready = append(ready, v)
		}
	}
	sort.Strings(ready)
	for len(ready) > 0 {
		v := ready[0]
		ready = ready[1:]
		out = append(out, v)
		for _, u := range users[v] {
			if waiting[u]--; waiting[u] == 0 {
				i := sort.SearchStrings(ready, u)
				ready = slices.Insert(ready, i, u)
			}
		}
	}
	for v, n := range waiting {
		if n > 0 {
			stuck = append(stuck, v)
		}
	}
	sort.Strings(stuck)
	return out, stuck
}

// Reaches reports whether to is a (transitive) dependency of from.
func (g *Graph) Reaches(from, to string) bool {
	seen := map[string]bool{}
	stack := []string{from}
	for len(stack) > 0 {
		a := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if a == to {
			return true
		}
		if seen[a] {
			continue
		}
		seen[a] = true
		stack = append(stack, g.Deps[a]...)
	}
	return false
}

// Dependents returns the addresses that depend directly on addr, sorted.
func (g *Graph) Dependents(addr string) []string {
	var out []string
	for _, v := range slices.Sorted(maps.Keys(g.Deps)) {
		if slices.Contains(g.Deps[v], addr) {
			out = append(out, v)
		}
	}
	return out
}

// Reverse is the graph with every edge turned around: each vertex maps to
// the vertices that depend on it (sorted), as a destroy walks it.
func (g *Graph) Reverse() *Graph {
	out := &Graph{Deps: make(map[string][]string, len(g.Deps))}
	for v, deps := range g.Deps {
		if _, ok := out.Deps[v]; !ok {
			out.Deps[v] = nil
		}
		for _, d := range deps {
			out.Deps[d] = append(out.Deps[d], v)
		}
	}
	for _, users := range out.Deps {
		sort.Strings(users)
	}
	return out
}
