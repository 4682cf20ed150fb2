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
// runs the plugin's test_connection, which for UDP (both plugins'
// default) only opens a socket and for a disabled server does nothing;
// the simulator sends nothing anywhere, so TCP and HTTP(S) servers are
// accepted as if reachable (docs/simulator.md).

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

func (s *Server) metricServerRoutes() []route {
	return idRoutes("/cluster/metrics/server", "/{id}",
		s.listMetricServers, s.createMetricServer, s.getMetricServer, s.updateMetricServer, s.deleteMetricServer)
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

// getMetricServer is read: the section with the file's digest, never the token.
func (s *Server) getMetricServer(q *request) (any, error) {
	cfg := s.metricServers()
	sec, ok := cfg[q.vars["id"]]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "status server entry '%s' does not exist", q.vars["id"])
	}
	out := typedAnswer("PUT", "/cluster/metrics/server/{id}", sec)
	out["id"], out["digest"] = q.vars["id"], cfg.digest()
	return out, nil
}

func (s *Server) createMetricServer(q *request) (any, error) {
	cfg := s.metricServers()
	id, typ := q.vars["id"], q.get("type")
	if _, exists := cfg[id]; exists {
		return nil, fail(http.StatusInternalServerError, "Metric server '%s' already exists", id)
	}
	opts := requestOptions(q, "id", "type", "token")
	if q.has("token") {
		opts["token"] = "" // only checked as an option of the type here
	}
	if err := checkSection(metricTypes()[typ], opts, true); err != nil {
		return nil, fail(http.StatusInternalServerError, "%v", err)
	}
	delete(opts, "token")
	opts["type"] = typ
	cfg[id] = opts
	s.setMetricToken(id, q)
	return nil, s.saveLocked()
}

// setMetricToken is on_add_hook / on_update_hook: a token sent is stored
// (its digest), one sent empty or deleted removes it.
func (s *Server) setMetricToken(id string, q *request) {
	ensureMap(&s.st.MetricTokens)
	if t := q.get("token"); t != "" {
		s.st.MetricTokens[id] = secretHash(t)
	} else if q.has("token") || slices.Contains(schema.SplitList(q.get("delete")), "token") {
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
	del := slices.DeleteFunc(schema.SplitList(q.get("delete")), func(k string) bool { return k == "token" })
	if err := deleteSectionKeys(types, next, opts, del); err != nil {
		return nil, fail(http.StatusInternalServerError, "%v", err)
	}
	cfg[id] = next
	s.setMetricToken(id, q)
	return nil, s.saveLocked()
}

func (s *Server) deleteMetricServer(q *request) (any, error) {
	cfg := s.metricServers()
	id := q.vars["id"]
	if _, ok := cfg[id]; !ok {
		return nil, fail(http.StatusInternalServerError, "no such server '%s'", id)
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
