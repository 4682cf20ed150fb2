package main

import (
	"os"
	"path/filepath"
)

// cacheEnv names the directory of pvectl's display cache.
const cacheEnv = "PVECTL_CACHE_DIR"

// cacheDir is where plans keep what they showed of each config drive
// version, so that the next plan can show a new version's content as a
// diff (pkg/planner drivecache.go): $PVECTL_CACHE_DIR, else pvectl under
// the user's cache directory ($XDG_CACHE_HOME, ~/.cache). "off" (or a
// machine without a home) turns it off. The cache only shortens diffs:
// nothing a plan decides depends on it.
func cacheDir() string {
	if d := os.Getenv(cacheEnv); d != "" {
		if d == "off" {
			return ""
		}
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "pvectl")
}
