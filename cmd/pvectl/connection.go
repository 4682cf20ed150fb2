package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/pvectl/pvectl/pkg/planner"
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
	cfg, err := g.readConfig()
	if err != nil {
		return nil, err
	}
	get := func(string) string { return "" }
	if prof, name, err := cfg.profile(g.profileName()); err != nil {
		return nil, err
	} else if prof != nil {
		if err := checkProfileKeys(prof); err != nil {
			return nil, invalid(fmt.Errorf("profile %s in %s: %w", name, cfg.path, err))
		}
		get = func(key string) string { return prof[key] }
	}
	val := map[string]string{}
	fromEnv := map[string]string{}
	for _, k := range envKeys {
		val[k.key] = get(k.key)
		if e, ok := os.LookupEnv(k.env); ok && e != "" {
			val[k.key] = e
			fromEnv[k.key] = k.env
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
	for _, key := range []string{"tokenSecret", "sshPrivateKey"} {
		if env := fromEnv[key]; env != "" {
			if c.SecretEnv == nil {
				c.SecretEnv = map[string]string{}
			}
			c.SecretEnv[key] = env
		}
	}
	g.scrubber.Add(c.TokenSecret, c.SSHPrivateKey)
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

// checkProfileKeys refuses keys a profile does not know; keys are matched
// exactly as documented (tokenId, not tokenid).
func checkProfileKeys(prof map[string]string) error {
	var names []string
	known := map[string]bool{}
	for _, k := range envKeys {
		known[k.key] = true
		names = append(names, k.key)
	}
	for _, k := range settingKeys {
		known[k] = true
		names = append(names, k)
	}
	for _, k := range slices.Sorted(maps.Keys(prof)) {
		if known[k] {
			continue
		}
		hint := ""
		for _, n := range names {
			if strings.EqualFold(n, k) {
				hint = fmt.Sprintf(" (did you mean %s?)", n)
			}
		}
		return fmt.Errorf("unknown key %q%s (known: %s)", k, hint, strings.Join(names, ", "))
	}
	return nil
}

// clients hands out one API client per connection, created on first use.
type clients struct {
	g     *globalOptions
	conns map[string]*spec.Connection
	// broken are connections a saved plan names that cannot be rebuilt.
	broken map[string]error

	mu    sync.Mutex
	cache map[string]*pve.Client
}

// newClients gathers the connections: the default one (profile and
// PROXMOX_* variables), those of the specs, and — for `apply FILE` — those
// the plan saved, which the specs (when given) override.
func newClients(g *globalOptions, set *spec.Set, saved map[string]*planner.SavedConnection) (*clients, error) {
	def, err := g.defaultConnection()
	if err != nil {
		return nil, err
	}
	cs := &clients{g: g, conns: map[string]*spec.Connection{"": def}, broken: map[string]error{}, cache: map[string]*pve.Client{}}
	for name, s := range saved {
		if name == "" {
			if err := fillFromSaved(def, s); err != nil {
				cs.broken[name] = err
			}
			continue
		}
		c, err := s.Connection(name, os.LookupEnv)
		if err != nil {
			cs.broken[name] = err
			continue
		}
		cs.conns[name] = c
	}
	if set != nil {
		for name, c := range set.Connections {
			cs.conns[name] = c
			delete(cs.broken, name)
		}
	}
	for _, c := range cs.conns {
		g.scrubber.Add(c.TokenSecret, c.SSHPrivateKey)
	}
	return cs, nil
}

// fillFromSaved completes the default connection from a saved plan: every
// setting the profile and environment leave empty, and the token secret
// from the variable the plan names. A setting given now wins; if it points
// at another cluster, Verify refuses the plan.
func fillFromSaved(c *spec.Connection, s *planner.SavedConnection) error {
	from := s.Settings("")
	fill := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	fill(&c.URL, from.URL)
	if c.TokenID == "" {
		c.TokenID, c.User, c.TokenName = from.TokenID, from.User, from.TokenName
	}
	fill(&c.TLSFingerprint, from.TLSFingerprint)
	fill(&c.CAFile, from.CAFile)
	fill(&c.DNSDomain, from.DNSDomain)
	fill(&c.SSHUser, from.SSHUser)
	if len(c.Nodes) == 0 {
		c.Nodes = from.Nodes
	}
	if len(c.DNSServers) == 0 {
		c.DNSServers = from.DNSServers
	}
	if from.Insecure && os.Getenv("PROXMOX_INSECURE") == "" {
		c.Insecure = true
	}
	for key, dst := range map[string]*string{"tokenSecret": &c.TokenSecret, "sshPrivateKey": &c.SSHPrivateKey} {
		if *dst != "" {
			continue
		}
		v, err := s.Secret("", key, os.LookupEnv)
		if err != nil {
			return err
		}
		*dst = v
	}
	return nil
}

func (cs *clients) Connection(name string) *spec.Connection { return cs.conns[name] }

func (cs *clients) Client(name string) (*pve.Client, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.cache[name]; ok {
		return c, nil
	}
	if err := cs.broken[name]; err != nil {
		return nil, err
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
	if len(conn.Unresolved) > 0 {
		return nil, conn.Unresolved
	}
	if conn.URL == "" {
		return nil, fmt.Errorf("%s has no URL: set PROXMOX_URL (e.g. https://pve.example.com:8006)", what)
	}
	if conn.TokenID == "" || conn.TokenSecret == "" {
		return nil, fmt.Errorf("%s has no API token: set PROXMOX_TOKEN_ID=user@realm!name (or PROXMOX_USER and PROXMOX_TOKEN_NAME) and PROXMOX_TOKEN_SECRET", what)
	}
	opts := []pve.Option{
		pve.WithToken(conn.TokenID, conn.TokenSecret),
		pve.WithRequestTimeout(cs.g.requestTimeout),
		pve.WithTaskTimeout(cs.g.taskTimeout),
	}
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

// isTerminal reports whether a stream (stdin, or an output stream, seen
// through the scrubbing writer) is a terminal.
func isTerminal(stream any) bool {
	for {
		u, ok := stream.(interface{ Unwrap() io.Writer })
		if !ok {
			break
		}
		stream = u.Unwrap()
	}
	f, ok := stream.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
