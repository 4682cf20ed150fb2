package pvesim

import (
	"fmt"
	"strings"
)

// unifiedDiff renders `diff -u a b` of two small texts (3 lines of context),
// "" when they are equal. PVE shows this as the network `changes`.
func unifiedDiff(nameA, nameB, a, b string) string {
	if a == b {
		return ""
	}
	la := strings.SplitAfter(a, "\n")
	lb := strings.SplitAfter(b, "\n")
	if la[len(la)-1] == "" {
		la = la[:len(la)-1]
	}
	if lb[len(lb)-1] == "" {
		lb = lb[:len(lb)-1]
	}
	ops := diffOps(la, lb)

	const ctx = 3
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", nameA, nameB)
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk spans changes separated by at most 2*ctx unchanged lines.
		start := max(i-ctx, 0)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j
				continue
			}
			if j-end > 2*ctx {
				break
			}
		}
		end = min(end+ctx+1, len(ops))
		aStart, bStart := ops[start].ai, ops[start].bi
		var aLen, bLen int
		var body strings.Builder
		for _, op := range ops[start:end] {
			switch op.kind {
			case ' ':
				aLen++
				bLen++
			case '-':
				aLen++
			case '+':
				bLen++
			}
			body.WriteByte(op.kind)
			body.WriteString(op.line)
			if !strings.HasSuffix(op.line, "\n") {
				body.WriteString("\n\\ No newline at end of file\n")
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		out.WriteString(body.String())
		i = end
	}
	return out.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

type diffOp struct {
	kind   byte // ' ', '-', '+'
	line   string
	ai, bi int // line index in a and b where this op sits
}

// diffOps is an LCS line diff; the inputs are interface files of a few
// dozen lines, so the quadratic table is fine.
func diffOps(a, b []string) []diffOp {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i], i, j})
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, diffOp{'-', a[i], i, j})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j], i, j})
			j++
		}
	}
	return ops
}
