package spec

import (
	"sort"
	"strings"
)

// suggest returns the candidate closest to s, or "" when none is close
// enough to be a plausible typo. Case differences count for nothing so that
// "Memory" finds "memory".
func suggest(s string, candidates []string) string {
	best, bestDist := "", -1
	ls := strings.ToLower(s)
	for _, c := range candidates {
		if c == s {
			continue
		}
		d := editDistance(ls, strings.ToLower(c))
		if d > maxTypoDistance(s) {
			continue
		}
		if bestDist < 0 || d < bestDist || (d == bestDist && c < best) {
			best, bestDist = c, d
		}
	}
	return best
}

func maxTypoDistance(s string) int {
	if n := len(s) / 3; n > 2 {
		return n
	}
	return 2
}

// didYouMean renders a suggestion as a message suffix.
func didYouMean(s string, candidates []string) string {
	if c := suggest(s, candidates); c != "" {
		return ` — did you mean "` + c + `"?`
	}
	return ""
}

// editDistance is the optimal-string-alignment distance: Levenshtein plus
// adjacent transpositions, the most common typo ("memroy").
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
