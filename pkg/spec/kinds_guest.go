package spec

// guestRows returns the registry rows of the guests: QEMU VMs, templates, LXC containers (kindTable).
func guestRows() []*kindInfo {
	return []*kindInfo{
		qemuVMRow(),
		templateRow(),
		lxcContainerRow(),
	}
}

// qemuVMRow returns the registry row of the QemuVM kind (VM).
func qemuVMRow() *kindInfo {
	return &kindInfo{
		Name:         KindQemuVM,
		Outputs:      guestOutputs("VM"),
		Noun:         "VM",
		Renamable:    true,
		Create:       &apiCall{"POST", "/nodes/{node}/qemu"},
		Filled:       []string{"vmid"}, // allocated by the planner when not written
		Keys:         (*GuestKeys)(nil),
		Identity:     "name",
		Unique:       []string{"vmid"},
		Identities:   guestIdentities("name", "VM name"),
		RefValue:     paramValueOf("vmid"), // an ACL path names a guest by vmid
		Hint:         "a VM without vmid is found by its name: give each a different vmid or name, or remove one",
		ValueAliases: map[string]map[string]string{"machine": {"i440fx": "pc"}},
		NotKeys:      []string{"baseImage"},
		Check:        checks(qemuConveniences, checkISODrives, checkProvision, checkNotTemplateProvision),
		Refs: []refRule{
			{Key: "pool", Values: paramValue("pool"), Kinds: []string{KindPool}, PresentOnly: true},
			{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindLinuxBridge}, SameNode: true, PresentOnly: true},
			{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindSdnVnet}, PresentOnly: true},
			{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindBondInterface}, SameNode: true, Refuse: nicOnBond},
			{Key: "configDrive", Values: configDriveRef, Kinds: []string{KindConfigDriveISO}, SameNode: true},
			{Key: "a drive's volume", Values: driveVolumes, Kinds: []string{KindDownloadedImage}, SameNode: true, PresentOnly: true},
			{Key: "volumes", Values: volumeStorages, Kinds: []string{KindStorage}, PresentOnly: true},
			// Absent templates too: resolveFromTemplate refuses them.
			{Key: "fromTemplate", Values: fromTemplateRef, Kinds: []string{KindTemplate}},
			{Key: "a mapped device", Values: guestMappingRefs, Kinds: []string{KindHardwareMapping}, PresentOnly: true, Refuse: mappingWithoutNode},
		},
		Resolve: resolves(attachConfigDrive(KindConfigDriveISO), resolveFromTemplate(KindTemplate)),
	}
}

// templateRow returns the registry row of the Template kind (template).
func templateRow() *kindInfo {
	return &kindInfo{
		// A golden image (design §4): a QEMU template baked from
		// baseImage (clone, boot, provision, shut down, POST
		// …/template) and rebuilt when its recipe changes.
		Name:         KindTemplate,
		Outputs:      guestOutputs("template"),
		Noun:         "template",
		Create:       &apiCall{"POST", "/nodes/{node}/qemu"},
		Filled:       []string{"vmid"},
		Keys:         (*GuestKeys)(nil),
		NotKeys:      templateNotKeys,
		Identity:     "name",
		Unique:       []string{"vmid"},
		Identities:   guestIdentities("name", "VM name"),
		RefValue:     func(r *Resource) string { return r.Name },
		Hint:         "a template is found by its name: give each a different name, or remove one",
		Fixed:        map[string]string{"template": "1"},
		Required:     []string{"baseImage"},
		ValueAliases: map[string]map[string]string{"machine": {"i440fx": "pc"}},
		Check:        checks(checkTemplate, qemuConveniences, checkISODrives, checkProvision),
		Refs: []refRule{
			{Key: "pool", Values: paramValue("pool"), Kinds: []string{KindPool}, PresentOnly: true},
			{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindLinuxBridge}, SameNode: true, PresentOnly: true},
			{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindSdnVnet}, PresentOnly: true},
			{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindBondInterface}, SameNode: true, Refuse: nicOnBond},
			{Key: "a drive's volume", Values: driveVolumes, Kinds: []string{KindDownloadedImage}, SameNode: true, PresentOnly: true},
			{Key: "volumes", Values: volumeStorages, Kinds: []string{KindStorage}, PresentOnly: true},
			{Key: "a mapped device", Values: guestMappingRefs, Kinds: []string{KindHardwareMapping}, PresentOnly: true, Refuse: mappingWithoutNode},
		},
	}
}

// lxcContainerRow returns the registry row of the LxcContainer kind (container).
func lxcContainerRow() *kindInfo {
	return &kindInfo{
		Name:      KindLxcContainer,
		Outputs:   guestOutputs("container"),
		Noun:      "container",
		Renamable: true,
		Create:    &apiCall{"POST", "/nodes/{node}/lxc"},
		Filled:    []string{"vmid"},
		RequiredWhy: map[string]string{"ostemplate": "the template the container is made from, e.g. local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst " +
			"(PVE does not record it: write it for a container that exists too)"},
		Keys:       (*GuestKeys)(nil),
		Identity:   "hostname",
		Unique:     []string{"vmid"},
		Identities: guestIdentities("hostname", "CT hostname"),
		RefValue:   paramValueOf("vmid"),
		Hint:       "a container without vmid is found by its hostname: give each a different vmid or hostname, or remove one",
		NotKeys:    qemuOnlyKeys,
		Refs: []refRule{
			{Key: "pool", Values: paramValue("pool"), Kinds: []string{KindPool}, PresentOnly: true},
			{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindLinuxBridge}, SameNode: true, PresentOnly: true},
			{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindSdnVnet}, PresentOnly: true},
			{Key: "netN.bridge", Values: subKeyValues("net", "bridge"), Kinds: []string{KindBondInterface}, SameNode: true, Refuse: nicOnBond},
			{Key: "ostemplate", Values: paramValue("ostemplate"), Kinds: []string{KindDownloadedImage}, SameNode: true, PresentOnly: true},
			{Key: "volumes", Values: volumeStorages, Kinds: []string{KindStorage}, PresentOnly: true},
		},
	}
}
