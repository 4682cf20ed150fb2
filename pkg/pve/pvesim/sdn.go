package pvesim

import (
	"crypto/rand"
	"crypto/sha1"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// SDN as pve-network has it (src/PVE/API2/Network/SDN.pm and
// src/PVE/Network/SDN.pm): four section-config files under /etc/pve/sdn
// (zones.cfg, vnets.cfg, subnets.cfg, controllers.cfg) that every write
// edits, and .running-config, the JSON copy of them that `PUT
// /cluster/sdn` (commit_config) makes and that the nodes generate
// /etc/network/interfaces.d/sdn from when their network is reloaded.
// What the files hold and what is running differ until that commit: the
// lists answer one or the other (`running=1`), or their difference
// (`pending=1`, pending_config). Zones are sdnzones.go, vnets
// sdnvnets.go, subnets sdnsubnets.go, controllers sdncontrollers.go, the
// nodes' side (bridges, status, guest starts) sdnnode.go.

// sdnFiles are the section-config files commit_config copies, by name.
var sdnFiles = []string{"controllers", "subnets", "vnets", "zones"}

// sdnSection is one section of an SDN config file: its type, its
// options as the file holds them (booleans 0/1, integers as digits) and,
// for a subnet, its dhcp-range lines. Order is its place in the file.
type sdnSection struct {
	Type   string            `json:"type"`
	Opts   map[string]string `json:"opts,omitempty"`
	Ranges []string          `json:"dhcp_range,omitempty"`
	Order  int               `json:"order"`
}

func (c *sdnSection) clone() *sdnSection {
	n := *c
	n.Opts = maps.Clone(c.Opts)
	n.Ranges = slices.Clone(c.Ranges)
	return &n
}

// sdnFile is one config file's sections by id.
type sdnFile map[string]*sdnSection

func (f sdnFile) clone() sdnFile {
	out := sdnFile{}
	for id, c := range f {
		out[id] = c.clone()
	}
	return out
}

// sdnConfig is a set of the four files by name.
type sdnConfig map[string]sdnFile

func (c sdnConfig) clone() sdnConfig {
	out := sdnConfig{}
	for _, name := range sdnFiles {
		out[name] = c[name].clone()
	}
	return out
}

// sdnRunning is .running-config: a version counted up by every commit
// and the files as they were committed.
type sdnRunning struct {
	Version int       `json:"version"`
	Config  sdnConfig `json:"config"`
}

// sdnState is everything SDN keeps: the files, the running config (nil
// until the first commit), what each node generated at its last network
// reload (its /etc/network/interfaces.d/sdn), and the global lock's
// token (/etc/pve/sdn/.lock, PVE 9).
type sdnState struct {
	Files     sdnConfig                `json:"files"`
	Running   *sdnRunning              `json:"running,omitempty"`
	Nodes     map[string]*sdnNodeState `json:"nodes,omitempty"`
	LockToken string                   `json:"lock_token,omitempty"`
	Seq       int                      `json:"seq"` // last section order given
}

// sdn is the SDN state, made on first use.
func (s *Server) sdn() *sdnState {
	d := ensure(&s.st.SDN)
	ensureMap(&d.Files)
	for _, name := range sdnFiles {
		if d.Files[name] == nil {
			d.Files[name] = sdnFile{}
		}
	}
	ensureMap(&d.Nodes)
	return d
}

// sdnRead is the SDN state for a reader: one that was never written
// reads as empty and stays unmade (the state file gains no "sdn").
func (s *Server) sdnRead() *sdnState {
	if s.st.SDN == nil {
		return &sdnState{}
	}
	return s.sdn()
}

// running is the committed config's file name (an empty one before the
// first commit).
func (d *sdnState) running(name string) sdnFile {
	if d.Running == nil || d.Running.Config[name] == nil {
		return sdnFile{}
	}
	return d.Running.Config[name]
}

func (s *Server) sdnRoutes() []route {
	return slices.Concat(
		[]route{
			r("GET /cluster/sdn", s.sdnIndex),
			r("PUT /cluster/sdn", s.sdnReload),
			r("POST /cluster/sdn/lock", s.sdnLock),
			r("DELETE /cluster/sdn/lock", s.sdnReleaseLock),
			r("POST /cluster/sdn/rollback", s.sdnRollback),
		},
		crudRoutes("/cluster/sdn/zones", "/{zone}",
			s.listSDNZones, s.createSDNZone, s.getSDNZone, s.updateSDNZone, s.deleteSDNZone),
		crudRoutes("/cluster/sdn/vnets", "/{vnet}",
			s.listSDNVnets, s.createSDNVnet, s.getSDNVnet, s.updateSDNVnet, s.deleteSDNVnet),
		crudRoutes("/cluster/sdn/vnets/{vnet}/subnets", "/{subnet}",
			s.listSDNSubnets, s.createSDNSubnet, s.getSDNSubnet, s.updateSDNSubnet, s.deleteSDNSubnet),
		crudRoutes("/cluster/sdn/controllers", "/{controller}",
			s.listSDNControllers, s.createSDNController, s.getSDNController, s.updateSDNController, s.deleteSDNController),
		s.sdnNodeRoutes(),
	)
}

// sdnIndex is SDN.pm index.
func (s *Server) sdnIndex(*request) (any, error) {
	var out []map[string]any
	for _, id := range []string{"vnets", "zones", "controllers", "ipams", "dns", "fabrics"} {
		out = append(out, map[string]any{"id": id})
	}
	return out, nil
}

// sdnLocked is lock_sdn_config: the global lock, when one is held, needs
// its token; every failure inside is died with the caller's message
// ("create sdn zone object failed: …"), a parameter exception included
// (it is stringified: "… failed: 400 Parameter verification failed.\n
// tag: missing vlan tag").
func (s *Server) sdnLocked(token, errmsg string, code func(d *sdnState) error) error {
	d := s.sdn()
	err := func() error {
		if d.LockToken != "" && token != d.LockToken {
			return fmt.Errorf("invalid lock token provided!")
		}
		return code(d)
	}()
	if err == nil {
		return s.saveLocked()
	}
	return fail(http.StatusInternalServerError, "%s: %s", errmsg, perlString(err))
}

// perlString is how a die inside an eval reads when it is died again:
// a parameter exception stringifies with its code and one line per
// parameter (pve-common src/PVE/Exception.pm stringify).
func perlString(err error) string {
	ae, ok := err.(*apiError)
	if !ok || ae.errors == nil {
		return strings.TrimSuffix(err.Error(), "\n")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s\n", ae.status, ae.msg)
	for _, k := range slices.Sorted(maps.Keys(ae.errors)) {
		fmt.Fprintf(&b, "%s: %s\n", k, ae.errors[k])
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// sdnLock is SDN.pm lock: refused while something is pending unless
// allow-pending, and (through lock_sdn_config without a token) while a
// lock is held; the token is a UUID (generate_lock_token: v7).
func (s *Server) sdnLock(q *request) (any, error) {
	var token string
	err := s.sdnLocked("", "could not acquire lock for SDN config", func(d *sdnState) error {
		if !q.bool("allow-pending") && d.hasPending() {
			return fmt.Errorf("configuration has pending changes")
		}
		token = uuidV7()
		d.LockToken = token
		return nil
	})
	if err != nil {
		return nil, err
	}
	return token, nil
}

// sdnReleaseLock is SDN.pm release_lock: force drops it without a token.
func (s *Server) sdnReleaseLock(q *request) (any, error) {
	if q.bool("force") {
		s.sdn().LockToken = ""
		return nil, s.saveLocked()
	}
	return nil, s.sdnLocked(q.get("lock-token"), "could not release lock", func(d *sdnState) error {
		d.LockToken = ""
		return nil
	})
}

// releaseAfter is `$lock_token && $release_lock` of SDN.pm reload and
// rollback: the lock goes only when the call names release-lock. The
// schema's "default => 1" is documentation: pve-common RESTHandler.pm
// handle validates the parameters (JSONSchema.pm validate) but fills in
// no defaults, so without release-lock $release_lock is undef and the
// lock stays held.
func releaseAfter(q *request) bool {
	return q.get("lock-token") != "" && q.bool("release-lock")
}

// sdnRollback is SDN.pm rollback: the files become the running config
// again (empty ones before the first commit).
func (s *Server) sdnRollback(q *request) (any, error) {
	return nil, s.sdnLocked(q.get("lock-token"), "could not rollback SDN configuration", func(d *sdnState) error {
		for _, name := range sdnFiles {
			d.Files[name] = d.running(name).clone()
		}
		if releaseAfter(q) {
			d.LockToken = ""
		}
		return nil
	})
}

// sdnReload is SDN.pm reload: commit_config in the API process (the
// running config is the files from now on, its version one up), then a
// reloadnetworkall worker that runs `pvesh set /nodes/N/network` for
// every node. Each of those starts its own srvreload task on its node
// and returns; reloadnetworkall does not wait for them (the FIXME
// there), so the vnets are up on a node only when that node's
// srvreload task has ended (sdnnode.go) — after reloadnetworkall has.
// An offline node is skipped with its error in the log (the worker
// warns and goes on); it generates the config at its next reload.
func (s *Server) sdnReload(q *request) (any, error) {
	frr := 0
	err := s.sdnLocked(q.get("lock-token"), "could not commit SDN config", func(d *sdnState) error {
		version := 1
		if d.Running != nil {
			version = d.Running.Version + 1
		}
		// running_config_has_frr before and after: controllers.
		if len(d.running("controllers")) > 0 || len(d.Files["controllers"]) > 0 {
			frr = 1
		}
		d.Running = &sdnRunning{Version: version, Config: d.Files.clone()}
		if releaseAfter(q) {
			d.LockToken = ""
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.startTask(s.st.Nodes[0], "reloadnetworkall", "", nil, func(t *task) error {
		for _, node := range s.st.Nodes {
			t.logf("%s: reloading network config", node)
			if s.nodeOffline(node) {
				// pvesh's call is proxied to the node and fails; the
				// worker warns with run_command's die and goes on.
				t.logf("command 'pvesh set /nodes/%s/network --regenerate-frr %d' failed: exit code 255", node, frr)
				continue
			}
			// pvesh runs as root@pam.
			s.reloadNodeNetwork(node, "root@pam")
		}
		return nil
	}), nil
}

// hasPending is has_pending_changes: an object of one of the four files
// that pending_config marks.
func (d *sdnState) hasPending() bool {
	for _, name := range sdnFiles {
		for _, obj := range pendingConfig(d.running(name), d.Files[name]) {
			if _, ok := obj["pending"]; ok {
				return true
			}
		}
	}
	return false
}

// sdnEncode is SDN.pm encode_value: lists compared as sorted joins.
func sdnEncode(key, v string) string {
	switch key {
	case "dhcp-range":
		parts := strings.Split(v, "\n")
		slices.Sort(parts)
		return strings.Join(parts, ",")
	case "nodes", "exitnodes", "interfaces":
		parts := strings.Split(v, ",")
		slices.Sort(parts)
		return strings.Join(parts, ",")
	}
	return v
}

// sdnValues are a section's keys and values as pending_config sees
// them: "type", the options, a subnet's dhcp-range lines joined by
// newlines.
func sdnValues(c *sdnSection) map[string]string {
	if c == nil {
		return map[string]string{}
	}
	m := maps.Clone(c.Opts)
	if m == nil {
		m = map[string]string{}
	}
	m["type"] = c.Type
	if len(c.Ranges) > 0 {
		m["dhcp-range"] = strings.Join(c.Ranges, "\n")
	}
	return m
}

// pendingConfig is SDN.pm pending_config: per id the running values at
// the top, with `state` new/changed/deleted and `pending` holding what
// the files changed (a key the files dropped is "deleted"); `type` and
// a subnet's `vnet` come from the files. Values are raw strings here
// (sdnClass.object types them); "dhcp-range" is newline-joined.
func pendingConfig(running, cfg sdnFile) map[string]map[string]any {
	out := map[string]map[string]any{}
	obj := func(id string) map[string]any {
		if out[id] == nil {
			out[id] = map[string]any{}
		}
		return out[id]
	}
	pend := func(o map[string]any) map[string]any {
		if o["pending"] == nil {
			o["pending"] = map[string]any{}
		}
		return o["pending"].(map[string]any)
	}
	for _, id := range slices.Sorted(maps.Keys(running)) {
		rv, cv, o := sdnValues(running[id]), sdnValues(cfg[id]), obj(id)
		for _, k := range slices.Sorted(maps.Keys(rv)) {
			o[k] = rv[k]
			c, ok := cv[k]
			switch {
			case cfg[id] == nil:
				o["state"] = "deleted"
			case !ok:
				pend(o)[k] = "deleted"
				o["state"] = "changed"
			case sdnEncode(k, rv[k]) != sdnEncode(k, c):
				o["state"] = "changed"
			}
		}
		if o["state"] != nil {
			pend(o)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(cfg)) {
		rv, cv, o := sdnValues(running[id]), sdnValues(cfg[id]), obj(id)
		for _, k := range slices.Sorted(maps.Keys(cv)) {
			r, ok := rv[k]
			if k == "type" || k == "vnet" {
				o[k] = cv[k]
			} else if !ok || sdnEncode(k, cv[k]) != sdnEncode(k, r) {
				pend(o)[k] = cv[k]
			}
			if running[id] == nil {
				o["state"] = "new"
			} else if !ok {
				o["state"] = "changed"
			}
		}
		if o["state"] != nil {
			pend(o)
		}
	}
	return out
}

// sdnView is which config a GET answers: the files (with their digest),
// the running config, or pending_config of the two.
type sdnView struct {
	objs   map[string]map[string]any
	digest string
}

// view reads file name as the request asks (pending=1, running=1 or
// neither; pending wins, as in the handlers' if/elsif).
func (s *Server) sdnView(q *request, name string) sdnView {
	d := s.sdnRead()
	switch {
	case q.bool("pending"):
		return sdnView{objs: pendingConfig(d.running(name), d.Files[name])}
	case q.bool("running"):
		return sdnView{objs: rawObjects(d.running(name))}
	}
	return sdnView{objs: rawObjects(d.Files[name]), digest: sdnDigest(d.Files[name], sdnClasses()[name])}
}

// rawObjects are a file's sections as key/value maps.
func rawObjects(f sdnFile) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, c := range f {
		o := map[string]any{}
		for k, v := range sdnValues(c) {
			o[k] = v
		}
		out[id] = o
	}
	return out
}

// sdnDigest is the file's SHA-1 as SectionConfig write_config writes it:
// sections in file order, "type: id", required options first, then the
// others, each sorted; booleans as 0/1; dhcp-range a line each.
func sdnDigest(f sdnFile, cls *sdnClass) string {
	ids := slices.SortedFunc(maps.Keys(f), func(a, b string) int { return f[a].Order - f[b].Order })
	var b strings.Builder
	for _, id := range ids {
		c := f[id]
		fmt.Fprintf(&b, "%s: %s\n", c.Type, id)
		opts := cls.types[c.Type]
		keys := slices.Sorted(maps.Keys(opts))
		for _, required := range []bool{true, false} {
			for _, k := range keys {
				if opts[k] != required {
					continue
				}
				if k == "dhcp-range" {
					for _, r := range c.Ranges {
						fmt.Fprintf(&b, "\t%s %s\n", k, r)
					}
				} else if v, ok := c.Opts[k]; ok && v != "" {
					fmt.Fprintf(&b, "\t%s %s\n", k, v)
				}
			}
		}
		b.WriteString("\n")
	}
	return fmt.Sprintf("%x", sha1.Sum([]byte(b.String())))
}

// assertDigest is SectionConfig assert_if_modified.
func assertDigest(f sdnFile, cls *sdnClass, digest string) error {
	if digest != "" && digest != sdnDigest(f, cls) {
		return fmt.Errorf("detected modified configuration - file changed by other user? Try again.")
	}
	return nil
}

// uuidV7 is a random RFC 9562 version 7 UUID (UUID::generate_v7).
func uuidV7() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// sdnTyped types a stored value as SectionConfig reads the file back
// (check_value: booleans and integers are numbers), by the schema of
// the file's update method.
func sdnTyped(m *schema.Method, key, val string) any {
	if m == nil {
		return val
	}
	if p, ok := m.Param(key); ok && (p.Type == "boolean" || p.Type == "integer") {
		if n, err := strconv.ParseInt(val, 10, 64); err == nil {
			return n
		}
	}
	return val
}
