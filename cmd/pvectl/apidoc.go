package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// apidocOptions find PVE's API documentation, whose parameter descriptions
// schema and explain show. It is AGPL text, so pvectl does not carry it:
// the user points at a copy (every PVE node has one).
type apidocOptions struct {
	path string
}

const apidocHelp = "PVE's API documentation (apidoc.js or its JSON) for PVE's descriptions; " +
	"default: $PVECTL_APIDOC, ~/.config/pvectl/apidoc.js, " + schema.NodeAPIDoc +
	", or the one the configured PVE serves (PROXMOX_URL" + pve.APIDocPath + "); \"\" for none"

func (o *apidocOptions) addFlag(c *cobra.Command) {
	c.Flags().StringVar(&o.path, "apidoc", "", apidocHelp)
}

// descriptions reads the apidoc: --apidoc, else PVECTL_APIDOC, else the
// first of ~/.config/pvectl/apidoc.js and the PVE node's copy that exists,
// else (with fetch) the copy the configured PVE serves beside its API. A file named
// explicitly must be readable; `--apidoc ""` reads none.
func (o *apidocOptions) descriptions(c *cobra.Command, g *globalOptions, fetch bool) (*schema.Descriptions, error) {
	path, explicit := o.path, c.Flags().Changed("apidoc")
	if !explicit {
		path, explicit = os.LookupEnv("PVECTL_APIDOC")
	}
	if explicit {
		if path == "" {
			return nil, nil
		}
		d, err := schema.LoadDescriptions(path)
		if err != nil {
			return nil, invalid(fmt.Errorf("read PVE's API documentation: %w", err))
		}
		return d, nil
	}
	var candidates []string
	if dir, err := os.UserConfigDir(); err == nil {
		candidates = append(candidates, filepath.Join(dir, "pvectl", "apidoc.js"))
	}
	for _, p := range append(candidates, schema.NodeAPIDoc) {
		d, err := schema.LoadDescriptions(p)
		switch {
		case err == nil:
			return d, nil
		case errors.Is(err, fs.ErrNotExist):
			continue
		default:
			return nil, fmt.Errorf("read PVE's API documentation: %w", err)
		}
	}
	if !fetch {
		return nil, nil
	}
	return fromCluster(c.Context(), g), nil
}

// fromCluster fetches the API documentation the default connection's PVE
// serves at pve.APIDocPath; nil when no connection is configured or the
// node does not serve it (explain then says where to get one).
func fromCluster(ctx context.Context, g *globalOptions) *schema.Descriptions {
	if os.Getenv("PROXMOX_URL") == "" && g.profileName() == "" {
		return nil
	}
	cs, err := newClients(g, nil, nil)
	if err != nil {
		return nil
	}
	cl, err := cs.Client("")
	if err != nil {
		return nil
	}
	b, err := cl.Document(ctx, pve.APIDocPath)
	if err != nil {
		return nil
	}
	d, err := schema.ReadDescriptions(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	return d
}
