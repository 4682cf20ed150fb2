// Command pvectl manages Proxmox VE declaratively: YAML specs → live state →
// plan → apply. The commands here are thin: flags → options → a package call.
package main

import (
	"os"
	"runtime/debug"
	"strings"
)

// version, commit and date (the commit's, RFC 3339) are set at build time
// (-ldflags "-X main.version=… -X main.commit=… -X main.date=…", as make
// build and goreleaser do); without them, they come from the build info
// (go install module@version, or the VCS stamp of a local build).
var (
	version = "dev"
	commit  = ""
	date    = ""
)

func main() {
	// A short-lived process: a generous collector while the heap is
	// small, a headroom near a constant once it is big (gc.go). GOGC in
	// the environment wins.
	if _, set := os.LookupEnv("GOGC"); !set {
		tuneGC()
	}
	info, _ := debug.ReadBuildInfo()
	v := describeVersion(resolveVersion(version, info), commit, date, info)
	os.Exit(Execute(v, os.Args[1:], Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}

// describeVersion adds the commit and its date to a version, when known:
// "v1.2.3 (commit 0123456789ab, 2025-06-01T12:00:00Z)". The date is the
// commit's, not the build's, so that a build is reproducible (goreleaser
// and make build set it so; the build info's vcs.time is the same). The
// values set at build time win over the build info's VCS stamp; a commit
// the version names already ("dev-0123456789ab", git describe's
// "v1.2.3-4-g0123456") is not repeated.
func describeVersion(v, commit, date string, info *debug.BuildInfo) string {
	if info != nil {
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && commit == "":
				commit = s.Value
			case s.Key == "vcs.time" && date == "":
				date = s.Value
			}
		}
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	var details []string
	if commit != "" && !strings.Contains(v, commit[:min(7, len(commit))]) { // git describe abbreviates to 7
		details = append(details, "commit "+commit)
	}
	if date != "" {
		details = append(details, date)
	}
	if len(details) == 0 {
		return v
	}
	return v + " (" + strings.Join(details, ", ") + ")"
}

// resolveVersion is the version `pvectl version` and `--version` print:
// the one set at build time, else the module version `go install
// …@version` records, else the VCS revision of a local build.
func resolveVersion(set string, info *debug.BuildInfo) string {
	if set != "" && set != "dev" {
		return set
	}
	if info == nil {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", ""
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return "dev"
	}
	return "dev-" + rev + dirty
}
