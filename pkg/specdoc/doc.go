// Package specdoc documents the spec format from the registries that
// validate it: a JSON Schema for editors (`pvectl schema`) and field
// references with their change effects (`pvectl explain`). Both follow
// every kind row and key without edits here.
package specdoc
