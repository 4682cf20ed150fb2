package spec

import (
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
		lc := strings.ToLower(c)
		d := editDistance(ls, lc)
		// A truncated name ("Qemu" for "QemuVM") is close too.
		if d > maxTypoDistance(s) && (len(ls) < 3 || !strings.HasPrefix(lc, ls)) {
			continue
		}
		if bestDist < 0 || d < bestDist || (d == bestDist && c < best) {
			best, bestDist = c, d
		}
	}
	return best
}

// maxTypoDistance is how far a plausible typo of s may be: one edit per
// three characters, at least one ("memroy" → "memory", "net" → "net0"),
// so that a short unrelated word is not offered ("foo" → "boot").
func maxTypoDistance(s string) int { return max(1, len([]rune(s))/3) }

// didYouMean renders a suggestion as a message suffix.
func didYouMean(s string, candidates []string) string {
	return suggestionSuffix(suggest(s, candidates))
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

// suggestName is suggest for names the user chose (connections, resource
// names): they share no vocabulary, so only a close typo is a plausible
// match — at most max(1, len/3) edits ("lba" → "lab", "vmbr1" → "vmbr9",
// not "nope" → "p").
func suggestName(s string, candidates []string) string {
	best, bestDist := "", -1
	limit := max(1, len([]rune(s))/3)
	for _, c := range candidates {
		if c == s {
			continue
		}
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if d > limit {
			continue
		}
		if bestDist < 0 || d < bestDist || (d == bestDist && c < best) {
			best, bestDist = c, d
		}
	}
	return best
}

// suggestRef finds the reference r was probably meant to be: the kind and
// the name are each held to suggestName's bound, so that a short common
// prefix ("Pool/") does not make unrelated names look alike.
func suggestRef(r Ref, candidates []Ref) string {
	best, bestDist := "", -1
	kindLimit, nameLimit := max(1, len([]rune(r.Kind))/3), max(1, len([]rune(r.Name))/3)
	for _, c := range candidates {
		if c == r {
			continue
		}
		dk := editDistance(strings.ToLower(r.Kind), strings.ToLower(c.Kind))
		dn := editDistance(strings.ToLower(r.Name), strings.ToLower(c.Name))
		if dk > kindLimit || dn > nameLimit {
			continue
		}
		if d, s := dk+dn, c.String(); bestDist < 0 || d < bestDist || (d == bestDist && s < best) {
			best, bestDist = s, d
		}
	}
	return best
}

// didYouMeanName renders suggestName's answer as a message suffix.
func didYouMeanName(s string, candidates []string) string {
	return suggestionSuffix(suggestName(s, candidates))
}

// didYouMeanRef renders suggestRef's answer as a message suffix.
func didYouMeanRef(r Ref, candidates []Ref) string {
	return suggestionSuffix(suggestRef(r, candidates))
}

func suggestionSuffix(c string) string {
	if c == "" {
		return ""
	}
	return ` — did you mean "` + c + `"?`
}

// Suggest returns the address of the Set closest to a mistyped "Kind/name"
// (as the CLI's --target takes it), or "" when none is close.
func (s *Set) Suggest(addr string) string {
	r, err := parseRef(addr)
	if err != nil {
		return ""
	}
	refs := make([]Ref, len(s.Resources))
	for i, res := range s.Resources {
		refs[i] = res.Ref()
	}
	return suggestRef(r, refs)
}
