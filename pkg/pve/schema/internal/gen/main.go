// Command gen writes the compact facts table embedded by package schema:
// every method of the PVE apidoc with its parameters, descriptions dropped.
// The apidoc is AGPL test data (see NOTICE) and never compiled in itself.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

func main() {
	in := flag.String("in", "", "apidoc JSON to read")
	out := flag.String("out", "facts.json.gz", "facts table to write")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	if in == "" {
		return fmt.Errorf("-in is required")
	}
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	t, err := schema.FromAPIDoc(f)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := t.WriteFacts(&buf); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}
