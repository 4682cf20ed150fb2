// Package engine is pvectl's planner engine: it observes live PVE state
// for a set of resources, compares it with the specs through the kinds'
// contract (KindOps, its traits and doors: kind.go), produces a Plan (a
// value that can be saved and applied later), verifies a saved plan, and
// applies a Plan by walking the dependency DAG with bounded parallelism.
// It names no kind: the kinds live in package planner, which registers
// them (Register) and is the API the CLI uses. It never prints: progress
// flows through Hooks.
package engine
