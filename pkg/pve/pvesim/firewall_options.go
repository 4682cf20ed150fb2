package pvesim

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Firewall options per scope: what the API takes ($cluster_option_properties,
// $host_option_properties, $vm_option_properties, $vnet_option_properties
// in pve-firewall src/PVE/Firewall.pm) and what the file reads back
// (parse_clusterfw_option, parse_hostfw_option, parse_vmfw_option,
// parse_vnetfw_option); the set_options handlers of
// src/PVE/API2/Firewall/{Cluster,Host,VM,Vnet}.pm.

// fwOptKind is how an option's value is read from the file.
type fwOptKind int

const (
	optBool     fwOptKind = iota // 0|1, a number
	optInt                       // digits, a number
	optLogLevel                  // a log level or empty, lowercased
	optPolicy                    // ACCEPT|DROP|REJECT, uppercased
	optPolicy2                   // ACCEPT|DROP
	optString                    // a non-blank word
	optHelpers                   // nf_conntrack_helpers, lowercased and checked
)

type fwOptSpec struct {
	kind fwOptKind
	api  bool // an option the API sets (the rest only a hand edit writes)
}

var fwLogLevelRE = lazyre.New(`(?i)^(emerg|alert|crit|err|warning|notice|info|debug|nolog)?$`)

// read is the parser's view of a value: ok false drops the line.
func (o fwOptSpec) read(v string) (string, string, bool) {
	switch o.kind {
	case optBool:
		return "", v, v == "0" || v == "1"
	case optInt:
		return "", v, fwPortRE.MatchString(v)
	case optLogLevel:
		return "", strings.ToLower(v), fwLogLevelRE.MatchString(v)
	case optPolicy, optPolicy2:
		u := strings.ToUpper(v)
		return "", u, u == "ACCEPT" || u == "DROP" || (u == "REJECT" && o.kind == optPolicy)
	case optHelpers:
		l := strings.ToLower(v)
		for _, h := range strings.Split(l, ",") {
			if !fwConntrackHelpers[h] {
				return "", "", false
			}
		}
		return "", l, l != ""
	}
	return "", v, v != "" && !strings.ContainsAny(v, " \t")
}

// fwConntrackHelpers are the keys of $pve_fw_helpers (the API checks
// them with the schema's pve-fw-conntrack-helper format).
var fwConntrackHelpers = setOf(schema.FirewallConntrackHelpers...)

// fwOptionSpecs are the options of a scope's file.
func fwOptionSpecs(env string) map[string]fwOptSpec {
	b, i, l := fwOptSpec{optBool, true}, fwOptSpec{optInt, true}, fwOptSpec{optLogLevel, true}
	p := fwOptSpec{optPolicy, true}
	switch env {
	case "cluster":
		return map[string]fwOptSpec{"enable": i, "ebtables": b, "policy_in": p, "policy_out": p,
			"policy_forward": p, "log_ratelimit": {optString, true}}
	case "host":
		return map[string]fwOptSpec{"enable": b, "nosmurfs": b, "tcpflags": b, "ndp": b,
			"log_nf_conntrack": b, "nf_conntrack_allow_invalid": b, "protection_synflood": b, "nftables": b,
			"log_level_in": l, "log_level_out": l, "log_level_forward": l, "tcp_flags_log_level": l,
			"smurf_log_level": l, "nf_conntrack_helpers": {optHelpers, true}, "nf_conntrack_max": i,
			"nf_conntrack_tcp_timeout_established": i, "nf_conntrack_tcp_timeout_syn_recv": i,
			"protection_synflood_rate": i, "protection_synflood_burst": i, "protection_limit": {optInt, false}}
	case "vnet":
		return map[string]fwOptSpec{"enable": i, "policy_forward": {optPolicy2, true},
			"log_level_forward": {optLogLevel, true}}
	}
	return map[string]fwOptSpec{"enable": b, "dhcp": b, "ndp": b, "radv": b, "macfilter": b,
		"ipfilter": b, "ips": {optBool, false}, "log_level_in": l, "log_level_out": l,
		"policy_in": p, "policy_out": p, "ips_queues": {optString, false}, "layer2_protocols": {optString, false}}
}

// fwOptionsAnswer is copy_opject_with_digest of the options: numbers
// where the parser made them numbers. A cluster "enable" holding a
// timestamp (the anti-lockout call) reads as 0 once a minute old.
func fwOptionsAnswer(env string, opts map[string]string, now time.Time) (map[string]any, string) {
	specs := fwOptionSpecs(env)
	out := map[string]any{}
	for k, v := range opts {
		switch specs[k].kind {
		case optBool, optInt:
			n, _ := strconv.Atoi(v)
			if env == "cluster" && k == "enable" && n > 1 && now.Unix()-int64(n) > 60 {
				n = 0
			}
			out[k] = n
		default:
			out[k] = v
		}
	}
	d := fwDigest([]map[string]any{out})
	out["digest"] = d
	return out, d
}

// setFWOptions is the set_options handlers: digest, the delete list
// (each an option of the scope), then every option given. A cluster
// "enable" above 1 is stored as the current time; elsewhere enable is
// 0 or 1.
func (s *Server) setFWOptions(q *request, env string, opts map[string]string) error {
	_, digest := fwOptionsAnswer(env, opts, time.Now())
	if err := assertIfModified(q, digest); err != nil {
		return err
	}
	specs := fwOptionSpecs(env)
	for _, k := range schema.SplitList(q.get("delete")) {
		if spec, ok := specs[k]; !ok || !spec.api {
			return paramErr1("delete", "no such option '%s'", k)
		}
		delete(opts, k)
	}
	for _, k := range slices.Sorted(maps.Keys(specs)) {
		if !q.has(k) || !specs[k].api {
			continue
		}
		opts[k] = fwOptionValue(env, k, q.get(k), specs[k])
	}
	return nil
}

// fwOptionValue is the value written for a parameter: booleans as 1/0,
// a cluster enable above 1 as time(), a host or guest enable as 1/0.
func fwOptionValue(env, k, v string, spec fwOptSpec) string {
	if k == "enable" {
		n, _ := strconv.Atoi(v)
		if b, ok := schema.ParseBool(v); ok && spec.kind == optBool {
			n = map[bool]int{true: 1}[b]
		}
		switch {
		case env == "cluster" && n > 1:
			n = int(time.Now().Unix())
		case env != "cluster" && env != "vnet" && n != 0:
			n = 1
		}
		return strconv.Itoa(n)
	}
	if spec.kind == optBool {
		if b, ok := schema.ParseBool(v); ok {
			return map[bool]string{true: "1", false: "0"}[b]
		}
	}
	return v
}
