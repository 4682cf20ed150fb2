package pvesim

import (
	"maps"
	"net/http"
	"slices"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// External metric servers: /etc/pve/status.cfg, as pve-manager
// PVE/API2/Cluster/MetricServer.pm serves it, with the options of
// PVE/Status/{InfluxDB,Graphite,OpenTelemetry}.pm. An InfluxDB token is a sensitive
// parameter (extract_sensitive_params): kept apart from status.cfg
// (/etc/pve/priv/metricserver/<id>.pw, InfluxDB.pm set_credentials), so
// read never answers it; the simulator keeps its SHA-256 only. create
// and update run the plugin's test_connection: InfluxDB's and
// Graphite's do nothing for a disabled server and for UDP (their
// default) only open a socket; OpenTelemetry's always POSTs an empty
// payload over HTTP(S), disabled or not (OpenTelemetry.pm
// test_connection). The simulator sends nothing anywhere, so TCP and
// HTTP(S) servers are accepted as if reachable (docs/simulator.md).

// metricTypes are the plugins' options().
func metricTypes() map[string]map[string]sectionOpt {
	opt := map[string]sectionOpt{}
	influx := map[string]sectionOpt{"server": {required: true}, "port": {required: true}}
	for _, k := range []string{"mtu", "disable", "organization", "bucket", "token", "influxdbproto", "timeout",
		"max-body-size", "api-path-prefix", "verify-certificate"} {
		influx[k] = opt[k]
	}
	graphite := map[string]sectionOpt{"server": {required: true}}
	for _, k := range []string{"port", "mtu", "proto", "timeout", "path", "disable"} {
		graphite[k] = opt[k]
	}
	otel := map[string]sectionOpt{"server": {required: true}}
	for _, k := range []string{"port", "disable", "otel-protocol", "otel-path", "otel-timeout", "otel-headers",
		"otel-verify-ssl", "otel-max-body-size", "otel-resource-attributes", "otel-compression"} {
		otel[k] = opt[k]
	}
	return map[string]map[string]sectionOpt{"influxdb": influx, "graphite": graphite, "opentelemetry": otel}
}

// metricServerRoutes: the servers, and MetricServer.pm index above them
// (which lists server only, not export).
func (s *Server) metricServerRoutes() []route {
	return append(idRoutes("/cluster/metrics/server", "/{id}",
		s.listMetricServers, s.createMetricServer, s.getMetricServer, s.updateMetricServer, s.deleteMetricServer),
		r("GET /cluster/metrics", fwIndex("server")))
}

func (s *Server) metricServers() sections { return ensureMap(&s.st.MetricServers) }

// listMetricServers is server_index: id, disable (0 when unset), type,
// server, port.
func (s *Server) listMetricServers(q *request) (any, error) {
	cfg := s.metricServers()
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(cfg)) {
		sec := cfg[id]
		row := map[string]any{"id": id, "type": sec["type"], "server": sec["server"], "disable": 0}
		if sec["disable"] == "1" {
			row["disable"] = 1
		}
		if p, ok := sec["port"]; ok {
			row["port"] = typedAnswer("PUT", "/cluster/metrics/server/{id}", map[string]string{"port": p})["port"]
		}
		out = append(out, row)
	}
	return out, nil
}

// getMetricServer is read: the section as parse_config gives it (its
// type set on it) and nothing else — no id, no digest (pve-manager
// PVE/API2/Cluster/MetricServer.pm read returns $status_cfg->{ids}->{$id}),
// never the token.
func (s *Server) getMetricServer(q *request) (any, error) {
	cfg := s.metricServers()
	sec, ok := cfg[q.vars["id"]]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "status server entry '%s' does not exist", q.vars["id"])
	}
	return typedAnswer("PUT", "/cluster/metrics/server/{id}", sec), nil
}

// createMetricServer is MetricServer.pm create: the token is taken out
// (extract_sensitive_params) before check_config sees the options, so a
// type without a token option takes one too and drops it (Status/Plugin.pm
// on_add_hook does nothing; InfluxDB.pm's stores it).
func (s *Server) createMetricServer(q *request) (any, error) {
	cfg := s.metricServers()
	id, typ := q.vars["id"], q.get("type")
	if _, exists := cfg[id]; exists {
		return nil, fail(http.StatusInternalServerError, "Metric server '%s' already exists", id)
	}
	opts := requestOptions(q, "id", "type", "token")
	if err := checkSection(metricTypes()[typ], opts, true); err != nil {
		return nil, fail(http.StatusInternalServerError, "%v", err)
	}
	dropFalseDisable(opts)
	opts["type"] = typ
	cfg[id] = opts
	s.setMetricToken(id, typ, q)
	return nil, s.saveLocked()
}

// dropFalseDisable is SectionConfig.pm write_config: disable is written
// ("\tdisable") only when set, so a server saved with disable=0 reads
// back without it.
func dropFalseDisable(sec map[string]string) {
	if v, ok := sec["disable"]; ok {
		if b, _ := schema.ParseBool(v); !b {
			delete(sec, "disable")
		}
	}
}

// setMetricToken is InfluxDB.pm on_add_hook / on_update_hook after
// pve-common Tools.pm extract_sensitive_params: a token sent is stored
// (its digest), an empty one too (it is defined: set_credentials writes
// an empty file); one deleted and not sent is removed. The other
// plugins' hooks keep nothing.
func (s *Server) setMetricToken(id, typ string, q *request) {
	if typ != "influxdb" {
		return
	}
	ensureMap(&s.st.MetricTokens)
	if q.has("token") {
		s.st.MetricTokens[id] = secretHash(q.get("token"))
	} else if slices.Contains(schema.SplitList(q.get("delete")), "token") {
		delete(s.st.MetricTokens, id)
	}
}

func (s *Server) updateMetricServer(q *request) (any, error) {
	cfg := s.metricServers()
	id := q.vars["id"]
	if err := assertIfModified(q, cfg.digest()); err != nil {
		return nil, err
	}
	sec, ok := cfg[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "no such server '%s'", id)
	}
	opts := requestOptions(q, "id", "digest", "delete", "token")
	types := metricTypes()[sec["type"]]
	if err := checkSection(types, opts, false); err != nil {
		return nil, fail(http.StatusInternalServerError, "%v", err)
	}
	next := maps.Clone(sec)
	maps.Copy(next, opts)
	// delete is checked against the type's options (MetricServer.pm
	// update): token is one of InfluxDB's only, so a graphite or
	// OpenTelemetry server refuses to delete it ("no such option").
	if err := deleteSectionKeys(types, next, opts, schema.SplitList(q.get("delete"))); err != nil {
		return nil, fail(http.StatusInternalServerError, "%v", err)
	}
	dropFalseDisable(next)
	cfg[id] = next
	s.setMetricToken(id, sec["type"], q)
	return nil, s.saveLocked()
}

func (s *Server) deleteMetricServer(q *request) (any, error) {
	cfg := s.metricServers()
	id := q.vars["id"]
	// MetricServer.pm delete looks the section's type up without checking
	// that the section exists: SectionConfig.pm lookup croaks on the
	// undefined type (the location is the caller's line, as of
	// pve-manager's master).
	if _, ok := cfg[id]; !ok {
		return nil, fail(http.StatusInternalServerError,
			"cannot lookup undefined type! at /usr/share/perl5/PVE/API2/Cluster/MetricServer.pm line 295.")
	}
	delete(cfg, id)
	delete(s.st.MetricTokens, id)
	return nil, s.saveLocked()
}

// MetricToken reports the SHA-256 (hex) of the token a metric server
// keeps in the simulated /etc/pve/priv: tests check with it what pvectl
// sent, since no API call shows it.
func (s *Server) MetricToken(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.st.MetricTokens[id]
	return v, ok
}

// RealmSecret reports the SHA-256 (hex) of a realm's stored bind
// password, as MetricToken does for a metric server.
func (s *Server) RealmSecret(realm string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.Domains == nil {
		return "", false
	}
	v, ok := s.st.Domains.Passwords[realm]
	return v, ok
}
