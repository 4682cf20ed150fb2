package planner

import (
	"strings"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// metricServerKind manages MetricServer: an external metric server of
// status.cfg (pve-manager PVE/API2/Cluster/MetricServer.pm,
// PVE/Status/{InfluxDB,Graphite}.pm). The list carries a few options, so
// each server is read. PVE gives no digest with it (read answers the
// section alone), so an update goes without one: the saved plan's check
// rests on the fingerprint of the settings (observe.go), as for every
// object PVE gives no digest for. type is the section's type (replace); every update
// carries server and port; an InfluxDB token is write-only, kept apart
// (/etc/pve/priv/metricserver), as a realm's password is.
var metricServerKind = &cfgKind{
	kind: spec.KindMetricServer, noun: "metric server", idParam: "id",
	listPath: "/cluster/metrics/server", listID: "id",
	itemPath: "/cluster/metrics/server/{id}", createPath: "/cluster/metrics/server/{id}", createOnItem: true,
	readItem: true,
	fixed:    []string{"type"},
	secrets:  []string{"token"},
	// The PUT's schema requires server and port, although a graphite
	// server's port is optional (PVE/Status/Graphite.pm: 2003 by default).
	always:        []string{"server", "port"},
	alwaysDefault: map[string]string{"port": "2003"},
	// An InfluxDB server over HTTP(S) authenticates with the token (UDP
	// takes none); PVE does not say whether one is stored.
	importSecret: func(cfg *pve.Config) string {
		if cfg.Get("type") == "influxdb" && strings.HasPrefix(cfg.Get("influxdbproto"), "http") {
			return "token"
		}
		return ""
	},
}
