package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
)

// readConcurrencyEnv and readConcurrencyKey set --read-concurrency from
// the environment and from a config profile (the flag wins, then the
// variable, then the profile).
const (
	readConcurrencyEnv = "PVECTL_READ_CONCURRENCY"
	readConcurrencyKey = "readConcurrency"
)

// settingKeys are the profile keys that tune pvectl rather than describe
// a connection.
var settingKeys = []string{readConcurrencyKey}

// readConcurrency resolves how many reads a plan keeps in flight per
// connection: --read-concurrency, else PVECTL_READ_CONCURRENCY, else the
// profile's readConcurrency, else the flag's default.
func (g *globalOptions) resolveReadConcurrency() (int, error) {
	if g.readConcurrencySet {
		return checkReadConcurrency("--read-concurrency", strconv.Itoa(g.readConcurrency))
	}
	if v, ok := os.LookupEnv(readConcurrencyEnv); ok && strings.TrimSpace(v) != "" {
		return checkReadConcurrency(readConcurrencyEnv, v)
	}
	cfg, err := g.readConfig()
	if err != nil {
		return 0, err
	}
	prof, name, err := cfg.profile(g.profileName())
	if err != nil {
		return 0, err
	}
	if v, ok := prof[readConcurrencyKey]; ok && v != "" {
		n, err := checkReadConcurrency(fmt.Sprintf("profile %s in %s: %s", name, cfg.path, readConcurrencyKey), v)
		return n, err
	}
	return g.readConcurrency, nil
}

func checkReadConcurrency(where, v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > 256 {
		return 0, invalid(fmt.Errorf("%s %q: want a whole number from 1 to 256", where, v))
	}
	return n, nil
}

// startCPUProfile starts the hidden --cpuprofile switch: a pprof CPU
// profile of the whole command, written when it ends (go tool pprof).
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, invalid(fmt.Errorf("--cpuprofile: %w", err))
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, invalid(fmt.Errorf("--cpuprofile: %w", err))
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
