package main

import (
	"testing"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// Every package-level pattern of the binary compiles (they compile on
// first use, so a bad one would otherwise wait for the code that uses it).
func TestPatternsCompile(t *testing.T) {
	if err := lazyre.AllValid(); err != nil {
		t.Fatal(err)
	}
}
