// Package conformance checks HTTP traffic against the full official PVE API
// schema (testdata/pve-api/apidoc-9.1.json, read at run time): request
// parameters and response bodies. It is test-side only and never part of
// the pvectl binary.
package conformance
