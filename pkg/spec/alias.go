package spec

import "go.yaml.in/yaml/v3"

// maxExpandedNodes bounds one document with its aliases expanded. A
// resource document has tens of values; aliases that multiply them beyond
// this are a "billion laughs" bomb: a 400-byte file can stand for hundreds
// of millions of values, and every later walk of the tree would expand it.
const maxExpandedNodes = 100_000

// aliasBomb returns the alias at which doc, expanded, grows past limit
// nodes (nil when it stays within). Expanded sizes are memoised per node,
// so the check is linear in the file's size, not in the expansion's.
func aliasBomb(doc *yaml.Node, limit int) *yaml.Node {
	s := &sizer{memo: map[*yaml.Node]int{}, limit: limit}
	running := 0
	return s.firstOver(doc, &running)
}

type sizer struct {
	memo  map[*yaml.Node]int
	limit int
}

// size is n's node count with aliases expanded, saturating at limit+1 (a
// cycle counts as too big).
func (s *sizer) size(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	if v, ok := s.memo[n]; ok {
		return v
	}
	s.memo[n] = s.limit + 1 // in progress
	total := 1
	if n.Kind == yaml.AliasNode {
		total += s.size(n.Alias)
	}
	for _, c := range n.Content {
		if total += s.size(c); total > s.limit {
			break
		}
	}
	total = min(total, s.limit+1)
	s.memo[n] = total
	return total
}

// firstOver walks n in document order, adding expanded sizes, and returns
// the alias at which the running total passes the limit.
func (s *sizer) firstOver(n *yaml.Node, running *int) *yaml.Node {
	if n == nil {
		return nil
	}
	*running++
	if n.Kind == yaml.AliasNode {
		if *running += s.size(n.Alias); *running > s.limit {
			return n
		}
		return nil
	}
	for _, c := range n.Content {
		if a := s.firstOver(c, running); a != nil {
			return a
		}
	}
	return nil
}
