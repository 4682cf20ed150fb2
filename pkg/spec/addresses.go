package spec

import (
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Addresses lists the Kind/name of the managed resources that the files
// and directories define, sorted, reading them leniently for shell
// completion: documents are decoded and interpolated as Load does, but
// nothing is validated and every problem is ignored. Stdin ("-") is not
// read.
func Addresses(paths []string) []string {
	l := &loader{getenv: os.LookupEnv, table: schema.Default(), stdin: strings.NewReader(""),
		poisoned: map[*yaml.Node]bool{}, rejected: map[Ref]bool{},
		secrets: map[*yaml.Node]secretRef{}, deferred: map[*yaml.Node]Diagnostic{}}
	var out []string
	for _, f := range l.expand(slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return p == StdinPath })) {
		for _, d := range l.readFile(f) {
			k := kindOf(d.kind)
			if k == nil || k.Role != roleResource || d.name == "" {
				continue
			}
			if a := d.ref().String(); !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	slices.Sort(out)
	return out
}
