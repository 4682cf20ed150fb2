// Package planner is pvectl's kinds and the API the CLI plans with: each
// kind (a file or a few per kind: qemu.go, bridge.go, firewall.go …)
// implements the engine's kind contract, and registry.go registers them
// all with the engine (internal/engine), which observes, plans, verifies
// and applies without naming any. api.go is the entry points (Observe,
// Build, PlanLive, Apply, Verify, Import) and the types of plans, as the
// engine defines them.
package planner
