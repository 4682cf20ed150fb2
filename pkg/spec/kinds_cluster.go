package spec

// clusterRows returns the registry rows of how the cluster runs: roles, groups, realms, options, metrics, HA, backup and replication jobs, hardware mappings (kindTable).
func clusterRows() []*kindInfo {
	return []*kindInfo{
		roleRow(),
		groupRow(),
		realmRow(),
		realmSyncJobRow(),
		clusterOptionsRow(),
		metricServerRow(),
		haResourceRow(),
		haRuleRow(),
		backupJobRow(),
		replicationJobRow(),
		hardwareMappingRow(),
	}
}

// roleRow returns the registry row of the Role kind (role).
func roleRow() *kindInfo {
	return &kindInfo{
		Name:       KindRole,
		Noun:       "role",
		Create:     &apiCall{"POST", "/access/roles"},
		Identity:   "roleid",
		Identities: singleIdentity("roleid", "roleid"),
		RefValue:   paramValueOf("roleid"),
		Check:      collect(checkRole),
	}
}

// groupRow returns the registry row of the Group kind (group).
func groupRow() *kindInfo {
	return &kindInfo{
		Name:       KindGroup,
		Noun:       "group",
		Create:     &apiCall{"POST", "/access/groups"},
		Identity:   "groupid",
		Identities: singleIdentity("groupid", "groupid"),
		RefValue:   paramValueOf("groupid"),
	}
}

// realmRow returns the registry row of the Realm kind (realm).
func realmRow() *kindInfo {
	return &kindInfo{
		Name:        KindRealm,
		Noun:        "realm",
		Create:      &apiCall{"POST", "/access/domains"},
		Update:      &apiCall{"PUT", "/access/domains/{realm}"},
		ParamsFrom:  realmParams,
		Keys:        (*SecretKeys)(nil),
		RequiredWhy: map[string]string{"type": "ldap, ad or openid"},
		Identity:    "realm",
		Identities:  singleIdentity("realm", "realm"),
		RefValue:    paramValueOf("realm"),
		Check:       collect(checkRealm),
	}
}

// realmSyncJobRow returns the registry row of the RealmSyncJob kind (realm sync job).
func realmSyncJobRow() *kindInfo {
	return &kindInfo{
		Name:        KindRealmSyncJob,
		Noun:        "realm sync job",
		Create:      &apiCall{"POST", "/cluster/jobs/realm-sync/{id}"},
		RequiredWhy: map[string]string{"schedule": "when to sync, a PVE calendar event (daily, sat 02:00 …)"},
		Identity:    "id",
		Identities:  singleIdentity("id", "job id"),
		Refs:        []refRule{{Key: "realm", Values: paramValue("realm"), Kinds: []string{KindRealm}}},
		Check:       collect(checkRealmSync),
	}
}

// clusterOptionsRow returns the registry row of the ClusterOptions kind (cluster options).
func clusterOptionsRow() *kindInfo {
	return &kindInfo{
		Name:       KindClusterOptions,
		Noun:       "cluster options",
		Create:     &apiCall{"PUT", "/cluster/options"},
		Identities: clusterOptionsIdentity,
		Hint:       "the cluster has one set of options: write one ClusterOptions per connection",
		Refused:    map[string]string{"delete": "pvectl sends delete itself: write a key as null to delete it (key: null), or drop a key pvectl wrote"},
	}
}

// metricServerRow returns the registry row of the MetricServer kind (metric server).
func metricServerRow() *kindInfo {
	return &kindInfo{
		Name:       KindMetricServer,
		Noun:       "metric server",
		Create:     &apiCall{"POST", "/cluster/metrics/server/{id}"},
		Keys:       (*SecretKeys)(nil),
		Identity:   "id",
		Identities: singleIdentity("id", "metric server id"),
		Check:      collect(checkSecretUpdate),
	}
}

// haResourceRow returns the registry row of the HAResource kind (HA resource).
func haResourceRow() *kindInfo {
	return &kindInfo{
		// pve-ha-manager API2/HA/Resources.pm; the guest is the
		// identity (sid vm:<vmid>).
		Name:       KindHAResource,
		Noun:       "HA resource",
		Create:     &apiCall{"POST", "/cluster/ha/resources"},
		Params:     []string{"sid", "state", "failback", "max_restart", "max_relocate", "comment"},
		Filled:     []string{"sid"}, // from guest (checkHAResource)
		Keys:       (*HAResourceKeys)(nil),
		Identities: singleIdentity("sid", "HA resource"),
		Hint:       "a guest has one HA resource: write it once",
		RefValue:   paramValueOf("sid"),
		Check:      collect(checkHAResource),
	}
}

// haRuleRow returns the registry row of the HARule kind (HA rule).
func haRuleRow() *kindInfo {
	return &kindInfo{
		// pve-ha-manager API2/HA/Rules.pm (PVE 9): the document's
		// name is the rule id.
		Name:        KindHARule,
		Noun:        "HA rule",
		Create:      &apiCall{"POST", "/cluster/ha/rules"},
		Filled:      []string{"resources"}, // from guests (checkHARule)
		Keys:        (*HARuleKeys)(nil),
		Identity:    "rule",
		Identities:  singleIdentity("rule", "HA rule"),
		Hint:        "a rule id names one rule: give each a different name",
		RequiredWhy: map[string]string{"type": "node-affinity (with nodes) or resource-affinity (with affinity)"},
		Refs: []refRule{
			{Key: "guests", Values: listValues("resources"), Kinds: []string{KindHAResource}, PresentOnly: true},
		},
		Check: collect(checkHARule),
	}
}

// backupJobRow returns the registry row of the BackupJob kind (backup job).
func backupJobRow() *kindInfo {
	return &kindInfo{
		// pve-manager API2/Backup.pm (jobs.cfg): the document's name
		// is the job id.
		Name:       KindBackupJob,
		Noun:       "backup job",
		Create:     &apiCall{"POST", "/cluster/backup"},
		Keys:       (*BackupJobKeys)(nil),
		Identity:   "id",
		Identities: singleIdentity("id", "backup job"),
		Hint:       "a job id names one backup job: give each a different name",
		Refused: map[string]string{
			"starttime": "the old form of schedule: write schedule (e.g. \"mon..fri 21:00\")",
			"dow":       "the old form of schedule: write schedule (e.g. \"mon..fri 21:00\")",
			"tmpdir":    "only root@pam may set it, and pvectl talks to PVE with an API token",
			"dumpdir":   "only root@pam may set it, and pvectl talks to PVE with an API token",
			"script":    "only root@pam may set it, and pvectl talks to PVE with an API token",
		},
		Refs: []refRule{
			{Key: "storage", Values: paramValue("storage"), Kinds: []string{KindStorage}, PresentOnly: true},
			{Key: "pool", Values: paramValue("pool"), Kinds: []string{KindPool}, PresentOnly: true},
		},
		Check: collect(checkBackupJob),
	}
}

// replicationJobRow returns the registry row of the ReplicationJob kind (replication job).
func replicationJobRow() *kindInfo {
	return &kindInfo{
		// pve-manager API2/ReplicationConfig.pm: identity guest +
		// target; the job id <vmid>-<n> is pvectl's choice.
		Name:        KindReplicationJob,
		Noun:        "replication job",
		Create:      &apiCall{"POST", "/cluster/replication"},
		Params:      []string{"id", "target", "schedule", "rate", "comment", "disable"},
		Filled:      []string{"id"},
		FoundBy:     []string{"target"},
		RequiredWhy: map[string]string{"target": "the node the guest's volumes replicate to"},
		Fixed:       map[string]string{"type": "local"},
		Keys:        (*ReplicationJobKeys)(nil),
		Identities:  replicationIdentities,
		Hint:        "PVE keeps one replication job per guest and target: write it once",
		Check:       collect(checkReplicationJob),
	}
}

// hardwareMappingRow returns the registry row of the HardwareMapping kind (hardware mapping).
func hardwareMappingRow() *kindInfo {
	return &kindInfo{
		// pve-manager API2/Cluster/Mapping/{PCI,USB,Dir}.pm: the
		// document's name is the mapping id; type picks the API. The
		// create call named is the PCI one, whose options are a
		// superset (checkHardwareMapping refuses mdev and
		// live-migration-capable elsewhere).
		Name:       KindHardwareMapping,
		Noun:       "hardware mapping",
		Create:     &apiCall{"POST", "/cluster/mapping/pci"},
		CallNote:   "pci in these paths is the spec's type: /cluster/mapping/pci, /cluster/mapping/usb or /cluster/mapping/dir (mdev and live-migration-capable are PCI's only)",
		Params:     []string{"id", "description", "mdev", "live-migration-capable"},
		Keys:       (*HardwareMappingKeys)(nil),
		Required:   []string{"type"},
		Identity:   "id",
		Identities: mappingIdentities,
		Hint:       "a mapping id names one mapping of its type: give each a different name",
		RefValue:   mappingRefValue,
		Check:      collect(checkHardwareMapping),
	}
}
