package lazyre

import (
	"strings"
	"testing"
)

func TestCompiledOnFirstUse(t *testing.T) {
	r := New(`^(\w+)-(\d+)$`)
	if got := r.FindStringSubmatch("vm-100"); len(got) != 3 || got[2] != "100" {
		t.Errorf("FindStringSubmatch = %q", got)
	}
	if !r.MatchString("ct-7") || r.MatchString("ct-") {
		t.Error("MatchString disagrees with regexp")
	}
	if first := r.Regexp(); r.Regexp() != first {
		t.Error("compiled twice")
	}
	if r.String() != `^(\w+)-(\d+)$` {
		t.Errorf("String = %q", r.String())
	}
}

// A bad pattern fails AllValid, naming it, though nothing used it.
func TestAllValidNamesABadPattern(t *testing.T) {
	if err := AllValid(); err != nil {
		t.Fatal(err)
	}
	New(`a(b`)
	err := AllValid()
	if err == nil || !strings.Contains(err.Error(), "missing closing )") {
		t.Errorf("AllValid = %v, want the compile error", err)
	}
	mu.Lock()
	all = all[:len(all)-1] // the other tests of this binary see a clean list
	mu.Unlock()
}
