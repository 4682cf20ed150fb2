package planner

import (
	"strings"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// realmKind manages Realm: an LDAP, AD or OpenID realm of domains.cfg
// (pve-access-control src/PVE/API2/Domains.pm, src/PVE/Auth/*.pm). The
// list carries type and comment only, so each realm is read (GET
// /access/domains/{realm}, with the file's digest, sent back with the
// update). type cannot change (the plugin is the section's type), nor an
// OpenID realm's username-claim (fixed): both replace. The LDAP/AD bind
// password is write-only: PVE keeps it apart (/etc/pve/priv/realm,
// LDAP.pm ldap_set_credentials) and never answers it, so it is sent at
// create and otherwise only under secretUpdate: always (docs/decisions.md).
// An OpenID client-key is a secret too, but domains.cfg keeps it and read
// answers it (OpenId.pm, Domains.pm read): it is compared like any
// setting, masked in diffs and traces.
var realmKind = &cfgKind{
	kind: spec.KindRealm, noun: "realm", idParam: "realm",
	listPath: "/access/domains", listID: "realm",
	itemPath: "/access/domains/{id}", createPath: "/access/domains",
	readItem: true,
	fixed:    []string{"type", "username-claim"},
	secrets:  []string{"password"},
	// pam and pve are on every installation.
	isBuiltin: func(row pve.Config) bool { return row["type"] == "pam" || row["type"] == "pve" },
	importSecret: func(cfg pve.Config) string {
		if cfg["bind_dn"] != "" {
			return "password"
		}
		return ""
	},
	// read: Realm.Allocate or Sys.Audit on /access/realm.
	readNeed: func(string) []permNeed {
		return []permNeed{needAny("/access/realm", "to read the realm's settings", "Realm.Allocate", "Sys.Audit")}
	},
	// create, update, delete: Realm.Allocate on /access/realm.
	changeNeed: func(c *Change, id string) []permNeed {
		return []permNeed{need("/access/realm", "to "+c.Action.String()+" realm "+id, "Realm.Allocate")}
	},
}

// realmSyncKind manages RealmSyncJob: a realm-sync section of jobs.cfg
// (pve-access-control src/PVE/API2/Jobs/RealmSync.pm). The list carries
// every option; the realm is fixed (replace); PVE refuses an update that
// only deletes ("no job options specified"), so every update carries the
// schedule.
var realmSyncKind = &cfgKind{
	kind: spec.KindRealmSyncJob, noun: "realm sync job", idParam: "id",
	listPath: "/cluster/jobs/realm-sync", listID: "id",
	itemPath: "/cluster/jobs/realm-sync/{id}", createPath: "/cluster/jobs/realm-sync/{id}", createOnItem: true,
	dropped: []string{"type", "last-run", "next-run"},
	fixed:   []string{"realm"},
	always:  []string{"schedule"},
	readNeed: func(string) []permNeed {
		return []permNeed{need("/", "to list the realm sync jobs", "Sys.Audit")}
	},
	// create_job, update_job: Realm.AllocateUser on the realm and
	// User.Modify on /access/groups; delete_job: Sys.Modify on /.
	changeNeed: func(c *Change, id string) []permNeed {
		if c.Action == Delete {
			return []permNeed{need("/", "to delete realm sync job "+id, "Sys.Modify")}
		}
		realm := c.Resource.Params["realm"]
		return []permNeed{
			need("/access/realm/"+realm, "to "+c.Action.String()+" a sync job of realm "+realm, "Realm.AllocateUser"),
			need("/access/groups", "to "+c.Action.String()+" realm sync job "+id, "User.Modify"),
		}
	},
}

// metricServerKind manages MetricServer: an external metric server of
// status.cfg (pve-manager PVE/API2/Cluster/MetricServer.pm,
// PVE/Status/{InfluxDB,Graphite}.pm). The list carries a few options, so
// each server is read (with the file's digest). type is the section's
// type (replace); every update carries server and port; an InfluxDB token is write-only, kept apart
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
	importSecret: func(cfg pve.Config) string {
		if cfg["type"] == "influxdb" && strings.HasPrefix(cfg["influxdbproto"], "http") {
			return "token"
		}
		return ""
	},
	readNeed: func(string) []permNeed {
		return []permNeed{need("/", "to read the metric servers", "Sys.Audit")}
	},
	changeNeed: func(c *Change, id string) []permNeed {
		return []permNeed{need("/", "to "+c.Action.String()+" metric server "+id, "Sys.Modify")}
	},
}
