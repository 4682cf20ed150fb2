// Package interop holds tests only: it drives the PVE simulator
// (pkg/pve/pvesim) with a PVE client library no one here wrote,
// github.com/luthermonson/go-proxmox, behind the official-schema checker.
// Where the library and the simulator disagree, PVE's own source decides
// which one is wrong; the library's own bugs are documented, and worked
// around, in interop_test.go.
//
// The library is imported from _test.go files only, so the pvectl binary
// does not link it.
package interop
