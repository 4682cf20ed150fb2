package spec

import "errors"

// Load reads files and directories (every *.yaml|*.yml in a directory,
// sorted), multi-document, strictly; interpolates ${VAR} and ${VAR:-default};
// merges Defaults; validates every document (PVE parameters against the
// schema facts, pvectl keys per kind); resolves references and builds the
// dependency graph. Every problem is collected: the error is Diagnostics.
func Load(paths []string, opts LoadOptions) (*Set, error) { panic("TODO") }

func parseRef(s string) (Ref, error) { return Ref{}, errors.New("TODO") }
