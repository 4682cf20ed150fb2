// Package spec turns pvectl's YAML files into a validated Set: documents are
// read strictly with file:line positions, ${VAR} interpolated, Defaults
// merged, spec keys checked against PVE's schema facts or pvectl's own key
// table per kind, and references resolved into a dependency graph.
package spec
