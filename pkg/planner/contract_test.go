package planner

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/spec"
)

// TestKindContract: every kind the planner registers ships whole — traits
// declared coherently (checkTraits), a permission declaration (or a written reason it needs none), import
// support or a written refusal, simulator routes for its create and
// update calls, a docs page, a schema entry, an example, and bad-input
// tests — and the failure names the kind and the missing part. The
// checklist is in docs/architecture.md ("How to add a kind").
func TestKindContract(t *testing.T) {
	root := filepath.Join("..", "..")
	sim, err := pvesim.New(pvesim.Options{TokenID: simToken, TokenSecret: simSecret})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	schemaDoc := readFile(t, filepath.Join(root, "docs", "pvectl.schema.json"))
	examples := readAll(t, filepath.Join(root, "examples", "*.yaml"), filepath.Join(root, "testdata", "examples", "*.yaml"))
	specTests := readAll(t, filepath.Join(root, "pkg", "spec", "*_test.go"))
	specs := map[string]*spec.KindSpec{}
	for _, k := range spec.KindSpecs() {
		specs[k.Kind] = k
	}
	names := make([]string, 0, len(engine.Kinds))
	for name := range engine.Kinds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		k := engine.Kinds[name]
		missing := func(what string) { t.Errorf("kind %s: %s", name, what) }
		checkTraits(name, k, missing)
		if _, declares := k.(engine.CallDeclarer); !declares && noPermissions[name] == "" {
			missing("no permission declaration (readCalls/changeCalls), nor a reason in noPermissions why it needs none")
		}
		_, imports := k.(engine.Importer)
		_, refuses := k.(engine.ImportRefuser)
		if !imports && !refuses {
			missing("neither import support (importer) nor a written refusal (importRefuser)")
		}
		if _, err := os.Stat(filepath.Join(root, "docs", "kinds", name+".md")); err != nil {
			missing("no docs page docs/kinds/" + name + ".md")
		}
		for _, o := range spec.KindOutputs(name) {
			if _, ok := k.(engine.Outputter); !ok && (specs[name] == nil || o.Name != specs[name].Identity) {
				missing("output " + o.Name + " is declared in its row (pkg/spec/kinds.go) but the kind produces none (outputter)")
			}
		}
		ks := specs[name]
		if ks == nil {
			missing("not in the spec registry (pkg/spec/kinds.go)")
			continue
		}
		if !strings.Contains(schemaDoc, `"const": "`+name+`"`) {
			missing("no entry in the committed JSON Schema (make generate)")
		}
		for _, call := range []*spec.Call{ks.Create, ks.Update} {
			if call != nil && !sim.Serves(call.String()) {
				missing("the simulator does not serve " + call.String())
			}
		}
		kindLine := regexp.MustCompile(`(?m)^kind: ` + regexp.QuoteMeta(name) + `\s*$`)
		if !slices.ContainsFunc(examples, kindLine.MatchString) {
			missing("no example under examples/ or testdata/examples/")
		}
		// A document in a test, in a raw string or a quoted one.
		inTest := regexp.MustCompile(`kind: ` + regexp.QuoteMeta(name) + `(\n|\\n)`)
		if !slices.ContainsFunc(specTests, inTest.MatchString) {
			missing("no bad-input test in pkg/spec naming it (a document `kind: " + name + "` in a test)")
		}
	}
}

// noPermissions are kinds whose calls PVE checks no privilege for, with
// the reason; empty today: every kind declares its needs.
var noPermissions = map[string]string{}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readAll(t *testing.T, globs ...string) []string {
	t.Helper()
	var out []string
	for _, g := range globs {
		paths, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			out = append(out, readFile(t, p))
		}
	}
	return out
}
