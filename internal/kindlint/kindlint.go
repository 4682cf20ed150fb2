// Package kindlint finds places outside a package's kind registry that
// name a kind: a Kind* constant or a string literal spelling a kind's name
// (which is also what a switch on kinds needs for its cases). Tests of pkg/spec and pkg/planner run
// it, so that kind facts stay in one row per kind.
package kindlint

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Find parses the non-test Go files of dir, except the allowed ones (base
// names), and returns one line per place that names a kind.
func Find(dir string, allowed []string, kinds []string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []string
	for _, f := range files {
		base := filepath.Base(f)
		if strings.HasSuffix(base, "_test.go") || slices.Contains(allowed, base) {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, err
		}
		report := func(n ast.Node, what string) {
			out = append(out, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), what))
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.Ident:
				if isKindConst(x.Name, kinds) {
					report(x, "names kind constant "+x.Name)
				}
			case *ast.BasicLit:
				if x.Kind == token.STRING {
					if s, err := strconv.Unquote(x.Value); err == nil && slices.Contains(kinds, s) {
						report(x, "spells kind name "+x.Value)
					}
				}
			}
			return true
		})
	}
	return out, nil
}

func isKindConst(name string, kinds []string) bool {
	k, ok := strings.CutPrefix(name, "Kind")
	return ok && slices.Contains(kinds, k)
}
