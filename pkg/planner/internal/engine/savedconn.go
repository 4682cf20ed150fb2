package engine

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/spec"
)

// SavedConnection is what a plan file keeps of a connection so that
// `apply FILE` can connect with only the secrets in the environment:
// every setting but the secrets, and for those the names of the
// environment variables that held them when the plan was made.
type SavedConnection struct {
	URL            string   `json:"url"`
	TokenID        string   `json:"tokenId,omitempty"`
	Nodes          []string `json:"nodes,omitempty"`
	Insecure       bool     `json:"insecure,omitempty"`
	TLSFingerprint string   `json:"tlsFingerprint,omitempty"`
	CAFile         string   `json:"caFile,omitempty"` // absolute: apply may run elsewhere
	DNSDomain      string   `json:"dnsDomain,omitempty"`
	DNSServers     []string `json:"dnsServers,omitempty"`
	SSHUser        string   `json:"sshUser,omitempty"`
	// SecretEnv maps a secret key (tokenSecret, sshPrivateKey) to the
	// variable it is read from; a secret that came from elsewhere (written
	// into the specs or a profile) is not listed and must come from there.
	SecretEnv map[string]string `json:"secretEnv,omitempty"`
}

// SaveConnection keeps c's settings, never its secrets.
func SaveConnection(c *spec.Connection) *SavedConnection {
	if c == nil {
		return nil
	}
	s := &SavedConnection{
		URL: c.URL, TokenID: c.TokenID, Nodes: slices.Clone(c.Nodes), Insecure: c.Insecure,
		TLSFingerprint: c.TLSFingerprint, CAFile: c.CAFile,
		DNSDomain: c.DNSDomain, DNSServers: slices.Clone(c.DNSServers), SSHUser: c.SSHUser,
	}
	if s.CAFile != "" {
		if abs, err := filepath.Abs(s.CAFile); err == nil {
			s.CAFile = abs
		}
	}
	if len(c.SecretEnv) > 0 {
		s.SecretEnv = maps.Clone(c.SecretEnv)
	}
	return s
}

// Connection rebuilds the connection named name, reading its secrets from
// the variables SecretEnv names. A secret that was not read from a
// variable, or whose variable is unset now, is an error that says where
// to put it.
func (s *SavedConnection) Connection(name string, getenv func(string) (string, bool)) (*spec.Connection, error) {
	c := s.Settings(name)
	var err error
	if c.TokenSecret, err = s.Secret(name, "tokenSecret", getenv); err != nil {
		return nil, err
	}
	if c.SSHPrivateKey, err = s.Secret(name, "sshPrivateKey", getenv); err != nil {
		return nil, err
	}
	if c.TokenID != "" && c.TokenSecret == "" {
		return nil, fmt.Errorf("%s: the plan does not say where its token secret comes from (it was not read from a variable): pass the specs that define it with -f", connLabel(name))
	}
	return c, nil
}

// Settings is the saved connection without secrets.
func (s *SavedConnection) Settings(name string) *spec.Connection {
	c := &spec.Connection{
		Name: name, URL: s.URL, TokenID: s.TokenID, Nodes: slices.Clone(s.Nodes), Insecure: s.Insecure,
		TLSFingerprint: s.TLSFingerprint, CAFile: s.CAFile,
		DNSDomain: s.DNSDomain, DNSServers: slices.Clone(s.DNSServers), SSHUser: s.SSHUser,
		SecretEnv: maps.Clone(s.SecretEnv),
	}
	if user, token, ok := strings.Cut(s.TokenID, "!"); ok {
		c.User, c.TokenName = user, token
	}
	return c
}

// Secret reads the secret key (tokenSecret, sshPrivateKey) from the
// variable the plan names; "" when it names none, an error when that
// variable is unset now.
func (s *SavedConnection) Secret(name, key string, getenv func(string) (string, bool)) (string, error) {
	env := s.SecretEnv[key]
	if env == "" {
		return "", nil
	}
	v, ok := getenv(env)
	if !ok || v == "" {
		return "", fmt.Errorf("%s: set %s (the plan was made with spec.%s from it)", connLabel(name), env, key)
	}
	return v, nil
}

// RecordConnections fills p.Connections with the settings of every
// connection the plan was made against (those of p.Endpoints), for a plan
// file.
func (p *Plan) RecordConnections(clients Clients) {
	for name := range p.Endpoints {
		if c := clients.Connection(name); c != nil {
			if p.Connections == nil {
				p.Connections = map[string]*SavedConnection{}
			}
			p.Connections[name] = SaveConnection(c)
		}
	}
}
