package schema

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/calendar"
)

// Named formats PVE registers in pve-common, qemu-server, pve-container and
// pve-storage. Formats not listed here are accepted unchecked, like a schema
// fact we cannot verify offline.
var simpleFormats = map[string]func(string) error{
	"pve-vmid":            reFormat(`^[1-9][0-9]{2,8}$`, "value does not look like a valid VM ID"),
	"pve-node":            reFormat(`^[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?$`, "value does not look like a valid node name"),
	"pve-configid":        reFormatQ(`(?i)^[a-z][a-z0-9_-]+$`, "invalid configuration ID '%s'"),
	"pve-storage-id":      reFormatQ(`(?i)^[a-z][a-z0-9\-_.]*[a-z0-9]$`, "storage ID '%s' contains illegal characters"),
	"pve-iface":           reFormatQ(`(?i)^[a-z][a-z0-9_]{1,20}([:.]\d+)?$`, "invalid network interface name '%s'"),
	"pve-bridge-id":       reFormatQ(`^[-_.\w\d]+$`, "invalid bridge ID '%s'"),
	"pve-poolid":          reFormatQ(`^[A-Za-z0-9.\-_]+(?:/[A-Za-z0-9.\-_]+){0,2}$`, "invalid pool ID '%s'"),
	"pve-groupid":         reFormatQ(`^[A-Za-z0-9.\-_]+$`, "invalid group name '%s'"),
	"pve-roleid":          reFormatQ(`^[A-Za-z0-9.\-_]+$`, "invalid role name '%s'"),
	"pve-realm":           reFormatQ(`^[A-Za-z][A-Za-z0-9.\-_]+$`, "value '%s' does not look like a valid realm"),
	"pve-userid":          checkUserID,
	"pve-tokenid":         checkTokenID,
	"pve-tag":             reFormatQ(`(?i)^[a-z0-9_][a-z0-9_\-+.]*$`, "invalid tag '%s'"),
	"urlencoded":          reFormatQ(`^[-%a-zA-Z0-9_.!~*'()]*$`, "invalid urlencoded string: %s"),
	"mac-addr":            reFormat(`(?i)^[a-f0-9][02468ace](?::[a-f0-9]{2}){5}$`, "value does not look like a valid unicast MAC address"),
	"email":               reFormat(`^[\w+\-~]+(\.[\w+\-~]+)*@[a-zA-Z0-9\-]+(\.[a-zA-Z0-9\-]+)*$`, "value does not look like a valid email address"),
	"dns-name":            checkDNSName,
	"ip":                  ipFormat(func(a netip.Addr) bool { return true }, "IP address"),
	"ipv4":                ipFormat(netip.Addr.Is4, "IPv4 address"),
	"ipv6":                ipFormat(func(a netip.Addr) bool { return a.Is6() && !a.Is4In6() }, "IPv6 address"),
	"CIDR":                cidrFormat(func(a netip.Addr) bool { return true }, "CIDR network"),
	"CIDRv4":              cidrFormat(netip.Addr.Is4, "IPv4 CIDR network"),
	"CIDRv6":              cidrFormat(netip.Addr.Is6, "IPv6 CIDR network"),
	"IPorCIDR":            checkIPorCIDR,
	"ipv4mask":            checkIPv4Mask,
	"address":             checkAddress,
	"pve-ipv4-config":     checkIPConfig("dhcp|manual", netip.Addr.Is4, "IPv4"),
	"pve-ipv6-config":     checkIPConfig("dhcp|auto|manual", netip.Addr.Is6, "IPv6"),
	"pve-volume-id":       reFormatQ(`^[^:\s]+:.+$`, "unable to parse volume ID '%s'"),
	"pve-storage-content": reFormatQ(`^(images|rootdir|vztmpl|iso|backup|snippets|import|none)$`, "invalid content type '%s'"),
	"pve-qm-bootdev":      reFormatQ(`^(ide[0-3]|sata[0-5]|scsi([0-9]|[12][0-9]|30)|virtio([0-9]|1[0-5])|efidisk0|tpmstate0|net([0-9]|[12][0-9]|3[01])|usb([0-9]|1[0-3])|hostpci([0-9]|1[0-5]))$`, "invalid boot device '%s'"),
	"pve-storage-path":    reFormatQ(`^/`, "invalid path '%s'"),
	// pve-ha-manager src/PVE/HA/Tools.pm pve_verify_ha_resource_id,
	// pve_verify_ha_resource_or_vm_id and pve_verify_ha_node (the -list
	// forms are check_format's split_list of these).
	"pve-ha-resource-id":       reFormat(`^[a-z]+:\S+$`, "value does not look like a valid ha resource id"),
	"pve-ha-resource-or-vm-id": reFormat(`^(?:[a-z]+:\S+|\d+)$`, "value does not look like a valid ha resource id"),
	"pve-ha-node":              reFormat(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9\-]*[a-zA-Z0-9])?)(?::\d+)?$`, "value does not look like a valid ha node"),
	"pve-calendar-event":       calendar.Verify,
	"pve-replication-id":       reFormatQ(`^\d+-\d+$`, "invalid replication job ID '%s'"),
	"pve-vlan-id-or-range":     reFormatQ(`^\d+(-\d+)?$`, "invalid VLAN tag or range '%s'"),
	"pve-fw-conntrack-helper":  checkConntrackHelpers,
	// pve-manager PVE/Status/Graphite.pm pve_verify_graphite_path.
	"graphite-path": reFormat(`^(([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)\.)*([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)$`,
		"value does not look like a valid graphite path"),
	// pve-guest-common PVE/Mapping/Dir.pm pve_verify_path: anchored at
	// the start only, as PVE's pattern is.
	"pve-storage-path-in-property-string": reFormat(`^/[^;,=()]+`,
		"Value does not look like a valid absolute path. These symbols are currently not allowed in path: ;,=()"),
}

// propertyFormats describes named formats that are property strings
// themselves; the apidoc only gives their typetext, so these follow
// qemu-server's definitions (kept lenient where PVE checks further in code).
var propertyFormats = map[string]map[string]*Param{
	"pve-qm-ipconfig": {
		"ip":  {Type: "string", Optional: true, Format: "pve-ipv4-config"},
		"gw":  {Type: "string", Optional: true, Format: "ipv4"},
		"ip6": {Type: "string", Optional: true, Format: "pve-ipv6-config"},
		"gw6": {Type: "string", Optional: true, Format: "ipv6"},
	},
	"pve-qm-boot": {
		"legacy": {Type: "string", Optional: true, DefaultKey: true, Pattern: `[acdn]{1,4}`},
		"order":  {Type: "string", Optional: true, Format: "pve-qm-bootdev-list"},
	},
	"pve-qm-hostpci": {
		"host":          {Type: "string", Optional: true, DefaultKey: true, Pattern: `(?:(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-9a-fA-F])?)(?:;(?:(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-9a-fA-F])?))*`},
		"mapping":       {Type: "string", Optional: true, Format: "pve-configid"},
		"pcie":          {Type: "boolean", Optional: true},
		"rombar":        {Type: "boolean", Optional: true},
		"romfile":       {Type: "string", Optional: true},
		"x-vga":         {Type: "boolean", Optional: true},
		"legacy-igd":    {Type: "boolean", Optional: true},
		"mdev":          {Type: "string", Optional: true},
		"driver":        {Type: "string", Optional: true, Enum: []string{"vfio", "keep"}},
		"device-id":     {Type: "string", Optional: true, Pattern: `0x[0-9a-fA-F]{4}`},
		"vendor-id":     {Type: "string", Optional: true, Pattern: `0x[0-9a-fA-F]{4}`},
		"sub-device-id": {Type: "string", Optional: true, Pattern: `0x[0-9a-fA-F]{4}`},
		"sub-vendor-id": {Type: "string", Optional: true, Pattern: `0x[0-9a-fA-F]{4}`},
	},
	"pve-vm-cpu-conf": {
		"cputype":         {Type: "string", Optional: true, DefaultKey: true},
		"flags":           {Type: "string", Optional: true, Pattern: `(?:[+-][a-zA-Z0-9\-_.]+;)*[+-][a-zA-Z0-9\-_.]+`},
		"hidden":          {Type: "boolean", Optional: true},
		"hv-vendor-id":    {Type: "string", Optional: true, Pattern: `[a-zA-Z0-9]{1,12}`},
		"phys-bits":       {Type: "string", Optional: true},
		"guest-phys-bits": {Type: "integer", Optional: true, Min: ptr(32), Max: ptr(64)},
		"reported-model":  {Type: "string", Optional: true},
	},
	"pve-qm-cicustom": {
		"meta":    {Type: "string", Optional: true, Format: "pve-volume-id"},
		"network": {Type: "string", Optional: true, Format: "pve-volume-id"},
		"user":    {Type: "string", Optional: true, Format: "pve-volume-id"},
		"vendor":  {Type: "string", Optional: true, Format: "pve-volume-id"},
	},
	"pve-qm-watchdog": {
		"model":  {Type: "string", Optional: true, DefaultKey: true, Enum: []string{"i6300esb", "ib700"}},
		"action": {Type: "string", Optional: true, Enum: []string{"reset", "shutdown", "poweroff", "pause", "debug", "none"}},
	},
	"pve-qm-rng": {
		"source":    {Type: "string", DefaultKey: true, Enum: []string{"/dev/urandom", "/dev/random", "/dev/hwrng"}},
		"max_bytes": {Type: "integer", Optional: true},
		"period":    {Type: "integer", Optional: true},
	},
	"pve-qm-smbios1": {
		"base64":       {Type: "boolean", Optional: true},
		"family":       {Type: "string", Optional: true},
		"manufacturer": {Type: "string", Optional: true},
		"product":      {Type: "string", Optional: true},
		"serial":       {Type: "string", Optional: true},
		"sku":          {Type: "string", Optional: true},
		"uuid":         {Type: "string", Optional: true, Pattern: `[a-fA-F0-9]{8}(?:-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}`},
		"version":      {Type: "string", Optional: true},
	},
	// prune-backups: the apidoc's typetext lists the keys (the format is
	// registered by pve-common's JSONSchema.pm; pve-storage
	// API2/Storage/PruneBackups.pm parses it): keep-all a boolean, the
	// others counts.
	"prune-backups": {
		"keep-all":     {Type: "boolean", Optional: true},
		"keep-daily":   {Type: "integer", Optional: true},
		"keep-hourly":  {Type: "integer", Optional: true},
		"keep-last":    {Type: "integer", Optional: true},
		"keep-monthly": {Type: "integer", Optional: true},
		"keep-weekly":  {Type: "integer", Optional: true},
		"keep-yearly":  {Type: "integer", Optional: true},
	},
	"pve-startup-order": {
		"order": {Type: "integer", Optional: true, DefaultKey: true, Min: ptr(0)},
		"up":    {Type: "integer", Optional: true, Min: ptr(0)},
		"down":  {Type: "integer", Optional: true, Min: ptr(0)},
	},
}

func ptr(f float64) *float64 { return &f }

// FirewallConntrackHelpers are the conntrack helpers PVE's firewall
// knows (pve-firewall src/PVE/Firewall.pm $pve_fw_helpers).
var FirewallConntrackHelpers = []string{"amanda", "ftp", "irc", "netbios-ns", "pptp", "sane", "sip", "snmp", "tftp"}

// checkConntrackHelpers is pve-firewall src/PVE/Firewall.pm
// pve_fw_verify_conntrack_helper: a comma list of known helpers, as
// written (Perl's split drops only trailing empty fields, which the
// join then misses). Its "unknown helper" die has no newline, so PVE's
// message goes on with " at …/Firewall.pm line N.".
func checkConntrackHelpers(v string) error {
	if v == "" {
		return nil
	}
	if strings.HasSuffix(v, ",") {
		return errors.New("extraneous commas in list")
	}
	for _, h := range strings.Split(v, ",") {
		if !slices.Contains(FirewallConntrackHelpers, h) {
			return fmt.Errorf("unknown helper %s", h)
		}
	}
	return nil
}

func checkNamedFormat(name, value string) error {
	if props, ok := propertyFormats[name]; ok {
		return checkPropertyString(value, props)
	}
	if f := simpleFormats[name]; f != nil {
		return f(value)
	}
	if base, ok := strings.CutSuffix(name, "-opt"); ok {
		if value == "" {
			return nil
		}
		return checkNamedFormat(base, value)
	}
	if base, ok := strings.CutSuffix(name, "-list"); ok {
		if _, known := simpleFormats[base]; !known {
			return nil
		}
		for _, item := range SplitList(value) {
			if err := checkNamedFormat(base, item); err != nil {
				return err
			}
		}
	}
	return nil
}

// SplitList splits a PVE list value ("a,b c;d") the way PVE's split_list
// does: at runs of NUL, ";", "," and white space, none empty. (Without a
// regexp: it runs for every list value of every spec.)
func SplitList(s string) []string {
	f := strings.FieldsFunc(s, isListSep)
	if len(f) == 0 {
		return nil
	}
	return f
}

func isListSep(r rune) bool {
	switch r {
	case 0, ';', ',', ' ', '\t', '\n', '\f', '\r':
		return true
	}
	return false
}

func reFormat(expr, msg string) func(string) error {
	re := lazyre.New(expr)
	return func(v string) error {
		if !re.MatchString(v) {
			return errors.New(msg)
		}
		return nil
	}
}

// reFormatQ is reFormat with the offending value quoted in the message.
func reFormatQ(expr, msg string) func(string) error {
	re := lazyre.New(expr)
	return func(v string) error {
		if !re.MatchString(v) {
			return fmt.Errorf(msg, v)
		}
		return nil
	}
}

var (
	userRE  = lazyre.New(`^[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+$`)
	tokenRE = lazyre.New(`^[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+![A-Za-z][A-Za-z0-9.\-_]+$`)
	labelRE = lazyre.New(`^[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?$`)
)

// checkUserID follows pve-access-control Auth/Plugin.pm verify_username:
// 3 to 64 characters (Perl's length of the decoded value), then the form.
func checkUserID(v string) error {
	switch n := utf8.RuneCountInString(v); {
	case n < 3:
		return fmt.Errorf("user name '%s' is too short", v)
	case n > 64:
		return fmt.Errorf("user name '%s' is too long (%d > 64)", v, n)
	case !userRE.MatchString(v):
		return fmt.Errorf("value '%s' does not look like a valid user name", v)
	}
	return nil
}

func checkTokenID(v string) error {
	if !tokenRE.MatchString(v) {
		return fmt.Errorf("value '%s' does not look like a valid token ID", v)
	}
	return nil
}

func checkDNSName(v string) error {
	for _, label := range strings.Split(v, ".") {
		if !labelRE.MatchString(label) {
			return fmt.Errorf("value '%s' does not look like a valid DNS name", v)
		}
	}
	return nil
}

func ipFormat(ok func(netip.Addr) bool, what string) func(string) error {
	return func(v string) error {
		a, err := netip.ParseAddr(v)
		if err != nil || a.Zone() != "" || !ok(a) {
			return fmt.Errorf("value does not look like a valid %s", what)
		}
		return nil
	}
}

func cidrFormat(ok func(netip.Addr) bool, what string) func(string) error {
	return func(v string) error {
		p, err := netip.ParsePrefix(v)
		if err != nil || !ok(p.Addr()) {
			return fmt.Errorf("value does not look like a valid %s", what)
		}
		return nil
	}
}

func checkIPorCIDR(v string) error {
	if strings.Contains(v, "/") {
		if _, err := netip.ParsePrefix(v); err == nil {
			return nil
		}
	} else if _, err := netip.ParseAddr(v); err == nil {
		return nil
	}
	return errors.New("value does not look like a valid IP address or CIDR network")
}

func checkIPv4Mask(v string) error {
	a, err := netip.ParseAddr(v)
	if err == nil && a.Is4() {
		b := a.As4()
		m := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		if m != 0 && (^m)&(^m+1) == 0 { // contiguous ones from the top
			return nil
		}
	}
	return errors.New("value does not look like a valid IP netmask")
}

func checkAddress(v string) error {
	if _, err := netip.ParseAddr(v); err == nil {
		return nil
	}
	if checkDNSName(v) == nil {
		return nil
	}
	return fmt.Errorf("value does not look like a valid address: %s", v)
}

// checkIPConfig accepts the keywords or an address/prefix of the right family.
func checkIPConfig(keywords string, ok func(netip.Addr) bool, family string) func(string) error {
	kw := strings.Split(keywords, "|")
	return func(v string) error {
		for _, k := range kw {
			if v == k {
				return nil
			}
		}
		if p, err := netip.ParsePrefix(v); err == nil && ok(p.Addr()) {
			return nil
		}
		return fmt.Errorf("invalid %s configuration: %s", family, v)
	}
}
