// Package lazyre holds regular expressions that compile on first use.
//
// A package-level regexp.MustCompile runs in the package's init, in every
// process that links the package: pvectl links the simulator, the schema,
// the provisioner and the planner, and their ~140 expressions took about
// 5 ms of every command's start (GODEBUG=inittrace=1), most of them
// patterns the command never matches. A Regexp of this package compiles
// when it is first used; AllValid compiles every one made so far, so a
// test still catches a bad pattern without running the code that uses it.
package lazyre

import (
	"fmt"
	"regexp"
	"sync"
)

// Regexp is a regular expression compiled on first use; its methods are
// regexp.Regexp's.
type Regexp struct {
	expr string
	re   func() *regexp.Regexp
}

var (
	mu  sync.Mutex
	all []*Regexp
)

// New returns a Regexp of expr, which must compile (as
// regexp.MustCompile's, a bad pattern panics: on first use, or in
// AllValid).
func New(expr string) *Regexp {
	r := &Regexp{expr: expr, re: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })}
	mu.Lock()
	all = append(all, r)
	mu.Unlock()
	return r
}

// AllValid compiles every Regexp made so far (the package-level ones of
// every linked package) and names the first that does not compile.
func AllValid() error {
	mu.Lock()
	rs := append([]*Regexp(nil), all...)
	mu.Unlock()
	for _, r := range rs {
		if _, err := regexp.Compile(r.expr); err != nil {
			return fmt.Errorf("lazyre: %w", err)
		}
	}
	return nil
}

// Regexp is the compiled expression.
func (r *Regexp) Regexp() *regexp.Regexp { return r.re() }

// String is the source text.
func (r *Regexp) String() string { return r.expr }

// The methods below are regexp.Regexp's, on the compiled expression (the
// ones pvectl's patterns use).

func (r *Regexp) MatchString(s string) bool                  { return r.re().MatchString(s) }
func (r *Regexp) FindStringIndex(s string) []int             { return r.re().FindStringIndex(s) }
func (r *Regexp) FindStringSubmatch(s string) []string       { return r.re().FindStringSubmatch(s) }
func (r *Regexp) FindAllStringIndex(s string, n int) [][]int { return r.re().FindAllStringIndex(s, n) }
func (r *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return r.re().FindAllStringSubmatch(s, n)
}
func (r *Regexp) Split(s string, n int) []string           { return r.re().Split(s, n) }
func (r *Regexp) ReplaceAllString(src, repl string) string { return r.re().ReplaceAllString(src, repl) }
func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.re().ReplaceAllStringFunc(src, repl)
}
