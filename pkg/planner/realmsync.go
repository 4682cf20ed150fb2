package planner

import "github.com/pvectl/pvectl/pkg/spec"

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
}
