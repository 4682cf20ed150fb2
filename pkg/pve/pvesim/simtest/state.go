package simtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// EditedState writes a simulator state file that edit changed and
// returns its path (a new file in the test's temporary directory): a
// cluster as no API call could make it (a drive PVE would not write), or
// many guests at once without a create each. The file is first what a
// simulator of opts (its StateFile set here) seeds; edit gets it as
// decoded JSON (numbers as float64).
func EditedState(tb testing.TB, opts pvesim.Options, edit func(st map[string]any)) string {
	tb.Helper()
	file := filepath.Join(tb.TempDir(), "state.json")
	opts.StateFile = file
	seed, err := pvesim.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	if err := seed.Close(); err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		tb.Fatal(err)
	}
	edit(st)
	if b, err = json.Marshal(st); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	return file
}
