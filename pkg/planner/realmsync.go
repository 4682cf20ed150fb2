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
