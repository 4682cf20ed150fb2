package render

import "strings"

// diffLine is one line of a text diff: op is '+', '-' or ' '.
type diffLine struct {
	op   byte
	text string
}

// maxDiffLines bounds the quadratic line diff; longer texts are shown as
// all old lines removed and all new ones added.
const maxDiffLines = 400

// textDiff is the line diff of two values when either is a text of more
// than one line (ok false otherwise, or when a side is not a string).
// An absent side is an empty text.
func textDiff(before, after any) ([]diffLine, bool) {
	b, bok := before.(string)
	a, aok := after.(string)
	if (!bok && before != nil) || (!aok && after != nil) {
		return nil, false
	}
	if !strings.Contains(b, "\n") && !strings.Contains(a, "\n") {
		return nil, false
	}
	return lineDiff(splitLines(b), splitLines(a)), true
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// lineDiff is a longest-common-subsequence diff of two line lists.
func lineDiff(old, new []string) []diffLine {
	if len(old) > maxDiffLines || len(new) > maxDiffLines {
		out := make([]diffLine, 0, len(old)+len(new))
		for _, l := range old {
			out = append(out, diffLine{'-', l})
		}
		for _, l := range new {
			out = append(out, diffLine{'+', l})
		}
		return out
	}
	// lcs[i][j]: the common subsequence's length of old[i:] and new[j:].
	lcs := make([][]int, len(old)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(new)+1)
	}
	for i := len(old) - 1; i >= 0; i-- {
		for j := len(new) - 1; j >= 0; j-- {
			if old[i] == new[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []diffLine
	i, j := 0, 0
	for i < len(old) && j < len(new) {
		switch {
		case old[i] == new[j]:
			out = append(out, diffLine{' ', old[i]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, diffLine{'-', old[i]})
			i++
		default:
			out = append(out, diffLine{'+', new[j]})
			j++
		}
	}
	for ; i < len(old); i++ {
		out = append(out, diffLine{'-', old[i]})
	}
	for ; j < len(new); j++ {
		out = append(out, diffLine{'+', new[j]})
	}
	return out
}
