package spec

// networkRows returns the registry rows of the firewall and software-defined networks (kindTable).
func networkRows() []*kindInfo {
	return []*kindInfo{
		firewallRow(),
		securityGroupRow(),
		sdnZoneRow(),
		sdnVnetRow(),
		sdnSubnetRow(),
		sdnControllerRow(),
		sdnApplyRow(),
	}
}

// firewallRow returns the registry row of the Firewall kind (firewall).
func firewallRow() *kindInfo {
	return &kindInfo{
		// The whole firewall of one scope (issue 20): no one PVE call
		// takes it, so every key is pvectl's; rules, options and
		// entries are checked as PVE's parameters (firewall.go).
		Name:       KindFirewall,
		Noun:       "firewall",
		Keys:       (*FirewallKeys)(nil),
		Required:   []string{"scope"},
		Identities: firewallIdentities,
		RefValue:   firewallRefValue,
		Hint:       "one Firewall document per scope: merge the two",
		Check:      checkFirewall(map[string]string{KindQemuVM: FirewallQemu, KindLxcContainer: FirewallLxc, KindSdnVnet: FirewallVnet}),
		Refs: []refRule{
			{Key: "rules", Values: ruleGroups, Kinds: []string{KindSecurityGroup}, PresentOnly: true, Skip: GroupUsesFirewallSets},
			{Key: "scope", Values: clusterFirewallRef, Kinds: []string{KindFirewall}, PresentOnly: true},
			{Key: "scope", Values: vnetScopeRef, Kinds: []string{KindSdnVnet}, PresentOnly: true},
		},
	}
}

// securityGroupRow returns the registry row of the SecurityGroup kind (security group).
func securityGroupRow() *kindInfo {
	return &kindInfo{
		Name:   KindSecurityGroup,
		Noun:   "security group",
		Create: &apiCall{"POST", "/cluster/firewall/groups"},
		// The same call changes the comment (Groups.pm: an existing
		// group with rename=group).
		Update:     &apiCall{"POST", "/cluster/firewall/groups"},
		Params:     []string{"group", "comment"},
		Keys:       (*SecurityGroupKeys)(nil),
		Identity:   "group",
		Identities: singleIdentity("group", "security group"),
		RefValue:   paramValueOf("group"),
		Hint:       "a security group is found by its name: give each a different group, or remove one",
		Check:      checkSecurityGroup,
		Refs: []refRule{
			{Key: "rules", Values: ruleSetUsers, Kinds: []string{KindFirewall}, PresentOnly: true, Skip: usesNoSetOf},
		},
	}
}

// sdnZoneRow returns the registry row of the SdnZone kind (SDN zone).
func sdnZoneRow() *kindInfo {
	return &kindInfo{
		// pve-network src/PVE/API2/Network/SDN/Zones.pm: the document's
		// name is the zone id.
		Name:        KindSdnZone,
		Noun:        "SDN zone",
		Create:      &apiCall{"POST", "/cluster/sdn/zones"},
		Identity:    "zone",
		Identities:  singleIdentity("zone", "SDN zone"),
		RefValue:    paramValueOf("zone"),
		Hint:        "a zone id names one SDN zone: give each a different name",
		RequiredWhy: map[string]string{"type": "simple, vlan, qinq, vxlan or evpn"},
		Refused:     sdnLockRefused,
		Refs: []refRule{
			{Key: "controller", Values: paramValue("controller"), Kinds: []string{KindSdnController}, PresentOnly: true},
		},
		Check: collect(checkSdnZone),
	}
}

// sdnVnetRow returns the registry row of the SdnVnet kind (SDN vnet).
func sdnVnetRow() *kindInfo {
	return &kindInfo{
		// Vnets.pm: the document's name is the vnet id, which guests'
		// NICs name as their bridge.
		Name:       KindSdnVnet,
		Noun:       "SDN vnet",
		Create:     &apiCall{"POST", "/cluster/sdn/vnets"},
		Identity:   "vnet",
		Identities: singleIdentity("vnet", "SDN vnet"),
		RefValue:   paramValueOf("vnet"),
		Hint:       "a vnet id names one vnet: give each a different name",
		Fixed:      map[string]string{"type": "vnet"},
		Refused:    sdnLockRefused,
		Refs: []refRule{
			{Key: "zone", Values: paramValue("zone"), Kinds: []string{KindSdnZone}, PresentOnly: true},
		},
		Resolve: checkVnetInZone(KindSdnZone),
	}
}

// sdnSubnetRow returns the registry row of the SdnSubnet kind (SDN subnet).
func sdnSubnetRow() *kindInfo {
	return &kindInfo{
		// Subnets.pm: found by its vnet and CIDR (PVE's id is
		// <zone>-<network>-<mask>, after the vnet's zone).
		Name:        KindSdnSubnet,
		Noun:        "SDN subnet",
		Create:      &apiCall{"POST", "/cluster/sdn/vnets/{vnet}/subnets"},
		Fixed:       map[string]string{"type": "subnet"},
		FoundBy:     []string{"vnet", "subnet"},
		RequiredWhy: map[string]string{"vnet": "the vnet the subnet is on", "subnet": "the subnet's CIDR (10.0.0.0/24)"},
		Identities:  subnetIdentities,
		RefValue:    paramValueOf("vnet"),
		Hint:        "a vnet has a CIDR once: merge the two subnets",
		Refused:     sdnLockRefused,
		Refs: []refRule{
			{Key: "vnet", Values: paramValue("vnet"), Kinds: []string{KindSdnVnet}, PresentOnly: true},
		},
		Check:   collect(checkSdnSubnet),
		Resolve: checkSubnetInVnet(KindSdnVnet, KindSdnSubnet),
	}
}

// sdnControllerRow returns the registry row of the SdnController kind (SDN controller).
func sdnControllerRow() *kindInfo {
	return &kindInfo{
		// Controllers.pm: evpn, bgp and isis controllers (faucet is not
		// offered by PVE's GUI and left out of the issue).
		Name:        KindSdnController,
		Noun:        "SDN controller",
		Create:      &apiCall{"POST", "/cluster/sdn/controllers"},
		Identity:    "controller",
		Identities:  singleIdentity("controller", "SDN controller"),
		RefValue:    paramValueOf("controller"),
		Hint:        "a controller id names one SDN controller: give each a different name",
		RequiredWhy: map[string]string{"type": "evpn, bgp or isis"},
		Refused:     sdnLockRefused,
		Check:       collect(checkSdnController),
	}
}

// sdnApplyRow returns the registry row of the SdnApply kind (SDN commit).
func sdnApplyRow() *kindInfo {
	return &kindInfo{
		// SDN.pm reload: commits the pending SDN configuration of the
		// whole cluster; pvectl sends the lock token itself.
		Name: KindSdnApply,
		Noun: "SDN commit",
		// No spec keys: the commit's parameters are the lock's, which
		// pvectl sends itself (PUT /cluster/sdn).
		Identities: func(r *Resource) []identity { return []identity{{ns: r.Kind, key: "SDN commit", what: "kind"}} },
		Hint:       "SDN is committed cluster-wide: write one SdnApply per connection",
		// Absent ones too: their removal is pending and needs the commit.
		Refs: []refRule{{Key: "sdn", Kinds: []string{KindSdnZone, KindSdnVnet, KindSdnSubnet, KindSdnController}, All: true}},
	}
}
