package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// envKeys maps a Connection field (its config-file key) to its variable.
var envKeys = []struct{ key, env string }{
	{"url", "PROXMOX_URL"},
	{"user", "PROXMOX_USER"},
	{"tokenName", "PROXMOX_TOKEN_NAME"},
	{"tokenSecret", "PROXMOX_TOKEN_SECRET"},
	{"tokenId", "PROXMOX_TOKEN_ID"},
	{"nodes", "PROXMOX_NODES"},
	{"dnsDomain", "PROXMOX_DNS_DOMAIN"},
	{"dnsServers", "PROXMOX_DNS_SERVERS"},
	{"sshUser", "PROXMOX_SSH_USER"},
	{"sshPrivateKey", "PROXMOX_SSH_PRIVATE_KEY"},
	{"insecure", "PROXMOX_INSECURE"},
	{"tlsFingerprint", "PROXMOX_TLS_FINGERPRINT"},
	{"caFile", "PROXMOX_CA_FILE"},
}

// defaultConnection builds the unnamed connection: the selected profile of
// the config file, overridden by PROXMOX_* variables (environment wins, as
// with the reference provider and Terraform).
func (g *globalOptions) defaultConnection() (*spec.Connection, error) {
	v := g.viper
	profile := g.profileName()
	cfgFile := g.configFile
	if cfgFile == "" {
		cfgFile = os.Getenv("PVECTL_CONFIG")
	}
	explicitCfg := cfgFile != ""
	if cfgFile == "" {
		if dir, err := os.UserConfigDir(); err == nil {
			cfgFile = filepath.Join(dir, "pvectl", "config.yaml")
		}
	}
	if cfgFile != "" {
		if _, err := os.Stat(cfgFile); err == nil || explicitCfg {
			v.SetConfigFile(cfgFile)
			if err := v.ReadInConfig(); err != nil {
				return nil, invalid(fmt.Errorf("read config file %s: %w", cfgFile, err))
			}
		}
	}
	get := func(key string) string { return "" }
	if profile != "" {
		if _, err := os.Stat(cfgFile); err != nil {
			return nil, invalid(fmt.Errorf("--profile %s: no config file at %s (set --config or PVECTL_CONFIG)", profile, cfgFile))
		}
		sub := v.Sub("profiles." + profile)
		if sub == nil {
			return nil, invalid(fmt.Errorf("profile %q not found in %s (expected profiles.%s)", profile, cfgFile, profile))
		}
		if err := checkProfileKeys(sub.AllKeys()); err != nil {
			return nil, invalid(fmt.Errorf("profile %s in %s: %w", profile, cfgFile, err))
		}
		get = func(key string) string { return sub.GetString(key) }
	}
	val := map[string]string{}
	for _, k := range envKeys {
		val[k.key] = get(k.key)
		if e, ok := os.LookupEnv(k.env); ok && e != "" {
			val[k.key] = e
		}
	}
	insecure, err := parseFlag(val["insecure"])
	if err != nil {
		return nil, invalid(fmt.Errorf("PROXMOX_INSECURE / insecure: %w", err))
	}
	c := &spec.Connection{
		URL:            val["url"],
		User:           val["user"],
		TokenName:      val["tokenName"],
		TokenSecret:    val["tokenSecret"],
		TokenID:        val["tokenId"],
		Nodes:          splitList(val["nodes"]),
		DNSDomain:      val["dnsDomain"],
		DNSServers:     splitList(val["dnsServers"]),
		SSHUser:        val["sshUser"],
		SSHPrivateKey:  val["sshPrivateKey"],
		Insecure:       insecure,
		TLSFingerprint: val["tlsFingerprint"],
		CAFile:         val["caFile"],
	}
	if c.TokenID == "" && c.User != "" && c.TokenName != "" {
		c.TokenID = c.User + "!" + c.TokenName
	}
	return c, nil
}

func splitList(s string) []string {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == ';' })
	if len(f) == 0 {
		return nil
	}
	return f
}

// parseFlag reads a boolean setting; anything unrecognised is an error
// rather than a silent false.
func parseFlag(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "0", "false", "no", "off":
		return false, nil
	case "1", "true", "yes", "on":
		return true, nil
	}
	return false, fmt.Errorf("%q is not a boolean: use 1 or 0", s)
}

// checkProfileKeys refuses keys a profile does not know (viper lowercases them).
func checkProfileKeys(keys []string) error {
	known := map[string]bool{}
	var names []string
	for _, k := range envKeys {
		known[strings.ToLower(k.key)] = true
		names = append(names, k.key)
	}
	for _, k := range keys {
		if !known[k] {
			return fmt.Errorf("unknown key %q (known: %s)", k, strings.Join(names, ", "))
		}
	}
	return nil
}

// clients hands out one API client per connection, created on first use.
type clients struct {
	g     *globalOptions
	conns map[string]*spec.Connection

	mu    sync.Mutex
	cache map[string]*pve.Client
}

func newClients(g *globalOptions, set *spec.Set) (*clients, error) {
	def, err := g.defaultConnection()
	if err != nil {
		return nil, err
	}
	conns := map[string]*spec.Connection{"": def}
	if set != nil {
		for name, c := range set.Connections {
			conns[name] = c
		}
	}
	return &clients{g: g, conns: conns, cache: map[string]*pve.Client{}}, nil
}

func (cs *clients) Connection(name string) *spec.Connection { return cs.conns[name] }

func (cs *clients) Client(name string) (*pve.Client, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.cache[name]; ok {
		return c, nil
	}
	conn := cs.conns[name]
	what := "connection " + name
	if name == "" {
		what = "the default connection (PROXMOX_* variables)"
		if p := cs.g.profileName(); p != "" {
			what = "the default connection (profile " + p + " and PROXMOX_* variables)"
		}
	}
	if conn == nil {
		return nil, fmt.Errorf("unknown connection %q: pass the spec files that define it with -f", name)
	}
	if conn.URL == "" {
		return nil, fmt.Errorf("%s has no URL: set PROXMOX_URL (e.g. https://pve.example.com:8006)", what)
	}
	if conn.TokenID == "" || conn.TokenSecret == "" {
		return nil, fmt.Errorf("%s has no API token: set PROXMOX_TOKEN_ID=user@realm!name (or PROXMOX_USER and PROXMOX_TOKEN_NAME) and PROXMOX_TOKEN_SECRET", what)
	}
	opts := []pve.Option{pve.WithToken(conn.TokenID, conn.TokenSecret)}
	if conn.Insecure {
		opts = append(opts, pve.WithInsecure(true))
	}
	if conn.CAFile != "" {
		opts = append(opts, pve.WithCAFile(conn.CAFile))
	}
	if conn.TLSFingerprint != "" {
		opts = append(opts, pve.WithFingerprint(conn.TLSFingerprint))
	}
	if cs.g.debug {
		opts = append(opts, pve.WithDebug(cs.g.streams.Err))
	}
	c, err := pve.NewClient(conn.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	cs.cache[name] = c
	return c, nil
}

// check builds the client of every connection in names, so that missing
// or malformed settings are invalid input reported before any API call.
func (cs *clients) check(names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if _, err := cs.Client(n); err != nil {
			return invalid(err) // Client names the connection
		}
	}
	return nil
}

func (g *globalOptions) profileName() string {
	if g.profile != "" {
		return g.profile
	}
	return os.Getenv("PVECTL_PROFILE")
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
