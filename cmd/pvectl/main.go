// Command pvectl manages Proxmox VE declaratively: YAML specs → live state →
// plan → apply. The commands here are thin: flags → options → a package call.
package main

import (
	"os"
	"runtime/debug"
)

// version is set at build time (-ldflags "-X main.version=…"); without it,
// the version comes from the build info (go install module@version).
var version = "dev"

func main() {
	info, _ := debug.ReadBuildInfo()
	os.Exit(Execute(resolveVersion(version, info), os.Args[1:], Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
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
