// Package planner compares desired resources with live PVE state, produces a
// Plan (a value that can be saved and applied later), and applies a Plan by
// walking the dependency DAG with bounded parallelism. It never prints:
// progress flows through Hooks.
package planner
