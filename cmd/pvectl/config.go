package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// defaultProfile is used when no profile is chosen and the config file
// has one of that name.
const defaultProfile = "default"

// config is the config file: named connection profiles.
type config struct {
	path     string // "" when there is none
	profiles map[string]map[string]string
}

// readConfig reads the config file (--config, PVECTL_CONFIG, or
// ~/.config/pvectl/config.yaml when it exists). Its keys are matched
// exactly: `profiles`, then the documented connection keys.
func (g *globalOptions) readConfig() (*config, error) {
	path := g.configFile
	if path == "" {
		path = os.Getenv("PVECTL_CONFIG")
	}
	explicit := path != ""
	if path == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return &config{}, nil
		}
		path = filepath.Join(dir, "pvectl", "config.yaml")
		if _, err := os.Stat(path); err != nil {
			return &config{}, nil
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if explicit && errors.Is(err, os.ErrNotExist) {
			return nil, invalid(fmt.Errorf("config file %s does not exist (given with --config or PVECTL_CONFIG)", path))
		}
		return nil, invalid(fmt.Errorf("read config file %s: %w", path, err))
	}
	cfg, err := parseConfig(data)
	if err != nil {
		return nil, invalid(fmt.Errorf("config file %s: %w", path, err))
	}
	cfg.path = path
	return cfg, nil
}

func parseConfig(data []byte) (*config, error) {
	var raw struct {
		Profiles map[string]map[string]yaml.Node `yaml:"profiles"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil && !errors.Is(err, io.EOF) { // an empty file has no profiles
		return nil, fmt.Errorf("%s (want profiles: NAME: {url: …, tokenId: …})", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	cfg := &config{profiles: map[string]map[string]string{}}
	for name, keys := range raw.Profiles {
		prof := map[string]string{}
		for k, n := range keys {
			v, err := scalarText(&n)
			if err != nil {
				return nil, fmt.Errorf("profiles.%s.%s (line %d): %w", name, k, n.Line, err)
			}
			prof[k] = v
		}
		cfg.profiles[name] = prof
	}
	return cfg, nil
}

// scalarText renders a profile value as the variable would hold it: a
// list (nodes, dnsServers) joined with commas.
func scalarText(n *yaml.Node) (string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "", nil
		}
		return n.Value, nil
	case yaml.SequenceNode:
		var parts []string
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return "", errors.New("want a string or a list of strings")
			}
			parts = append(parts, c.Value)
		}
		return strings.Join(parts, ","), nil
	}
	return "", errors.New("want a string or a list of strings")
}

// profile returns the profile named name ("": the default profile when
// the file has one, else none). An unknown name is an error listing the
// profiles there are.
func (c *config) profile(name string) (map[string]string, string, error) {
	if name == "" {
		if p, ok := c.profiles[defaultProfile]; ok {
			return p, defaultProfile, nil
		}
		return nil, "", nil
	}
	if c.path == "" {
		return nil, "", invalid(fmt.Errorf("--profile %s: there is no config file (create ~/.config/pvectl/config.yaml, or set --config or PVECTL_CONFIG)", name))
	}
	if p, ok := c.profiles[name]; ok {
		return p, name, nil
	}
	have := "it has none"
	if len(c.profiles) > 0 {
		have = "profiles there: " + strings.Join(slices.Sorted(maps.Keys(c.profiles)), ", ")
	}
	return nil, "", invalid(fmt.Errorf("profile %s not found in %s (%s)", strconv.Quote(name), c.path, have))
}
