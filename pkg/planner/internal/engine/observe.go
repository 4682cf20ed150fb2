package engine

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/pvectl/pvectl/pkg/planner/marks"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Observed is the live state read for a Set. It is an input of Build only;
// a Plan carries what Apply needs on its own.
type Observed struct {
	Conns map[string]*LiveConn
	Objs  map[string]*LiveObj // by address
	// errs holds, by address, why a resource's live state could not be
	// read. Build reports them only for the resources it plans, so that a
	// broken resource does not block a --target elsewhere.
	Errs map[string]error
	// unknown holds, by address, why a resource's live state cannot be
	// known now (its node is down: degraded.go). Build leaves them out of
	// the plan and lists them as not planned.
	unknown map[string]string
	// providers indexes the specs' resources for providerOf (prereq.go).
	providers providerIndex
	// owned are the live objects with an owner mark that no document
	// names, and ownedErrs why they could not be looked for on a
	// connection (owner.go).
	owned     []*OwnedObj
	ownedErrs []string
}

// endpoint is the API root the named connection was read through ("" when
// it was not opened).
func (o *Observed) endpoint(conn string) string {
	if lc := o.Conns[conn]; lc != nil && lc.Client != nil {
		return lc.Client.BaseURL()
	}
	return ""
}

// LiveConn caches what one connection's cluster looks like, so every list
// is fetched at most once per Observe.
type LiveConn struct {
	Name      string
	Settings  *spec.Connection // may be nil
	Client    *pve.Client
	Resources []pve.ClusterResource
	Nodes     []string // sorted
	Networks  map[string]*LiveNetwork
	pools     []pve.Pool
	poolsRead bool
	users     map[string]*pve.User // with their tokens, read once
	usersRead bool
	acl       []pve.ACLEntry
	aclRead   bool
	Perms     pve.Permissions // the token's effective permissions
	// down holds the nodes that are offline or cannot be reached, with
	// why ("which is offline"): what is on them is unknown (degraded.go).
	Down map[string]string
	// kept is what kinds keep per connection besides the lists above, by
	// key, each set once by the kind that reads it: per guest type, the
	// guests as they are now, indexed (guestfind.go); what the token
	// cannot see under /vms (visibility.go).
	kept map[string]any
	// volumes are storage listings by node, storage and content, and
	// usersOfVolumes the VMs using each volume on their drives (content.go).
	Volumes        map[string][]pve.Volume
	usersOfVolumes map[string][]int
	// storages is GET /storage, read once (storageList).
	storages     []*pve.Config
	storagesRead bool
	// pre holds what only prerequisites read (prereq.go).
	Pre prereqCache
	// readConc caps this connection's reads in flight (ObserveOptions).
	ReadConc int
	// cluster indexes resources' pools and storages (provindex.go).
	cluster clusterIndex
	// cfgLists are the lists of the config-file kinds by path, read once
	// (cfgobj.go).
	CfgLists map[string][]*pve.Config

	// sections are cluster-wide section-config lists by path, read once
	// (section.go: HA, backup and replication jobs).
	Sections map[string][]*pve.Config
	// shared are lists that deferred reads (several at once) share, each
	// read once (sharedRows).
	SharedMu sync.Mutex
	Shared   map[string]*sharedList
}

// liveNetwork is one node's staged network view.
type LiveNetwork struct {
	Ifaces  []*pve.Config
	Changes string
}

// ObserveOptions tunes Observe.
type ObserveOptions struct {
	// ReadConcurrency caps the reads in flight per connection (config
	// reads, per-node lists); 0: DefaultReadConcurrency. It is apart from
	// ApplyOptions.Parallelism: reads are cheap for PVE (pveproxy serves
	// them from its worker pool without a task), changes are not.
	ReadConcurrency int
}

// DefaultReadConcurrency is how many reads Observe keeps in flight per
// connection. A config read costs PVE a file read under pmxcfs, no task
// and no lock, so a plan's time is its round trips: (lists +
// ⌈guests/16⌉) × RTT. 16 keeps a remote cluster's latency hidden without
// queueing much in pveproxy's small worker pool (docs/performance.md).
const DefaultReadConcurrency = 16

// observeWith is ObserveWith (api.go).
func observeWith(ctx context.Context, clients Clients, set *spec.Set, opts ObserveOptions) (*Observed, error) {
	conc := opts.ReadConcurrency
	if conc <= 0 {
		conc = DefaultReadConcurrency
	}
	obs := &Observed{Conns: map[string]*LiveConn{}, Objs: map[string]*LiveObj{}, Errs: map[string]error{}, unknown: map[string]string{}}
	ob := &observer{obs: obs, clients: clients, set: set, conc: conc, connErr: map[string]error{}}
	// A resource whose parameters name another's output is read once that
	// one was: the value goes in when it is known (outputs.go).
	var later []*spec.Resource
	for _, r := range set.Resources {
		if hasOutputRefs(r) {
			later = append(later, r)
			continue
		}
		if err := ob.Observe(ctx, r); err != nil {
			return obs, err
		}
	}
	ob.loadAll(ctx, obs.Objs)
	get := obs.planOutputs(set)
	for len(later) > 0 {
		waiting := map[string]bool{}
		for _, r := range later {
			waiting[r.Address()] = true
		}
		var next []*spec.Resource
		wave := map[string]*LiveObj{}
		for _, r := range later {
			if waitsFor(r, waiting) {
				next = append(next, r)
				continue
			}
			obs.resolveAtPlan(r, get)
			if err := ob.Observe(ctx, r); err != nil {
				return obs, err
			}
			if lo := obs.Objs[r.Address()]; lo != nil {
				wave[r.Address()] = lo
			}
		}
		if len(next) == len(later) {
			break // a cycle, which Load refuses: nothing can go first
		}
		ob.loadAll(ctx, wave)
		later = next
	}
	readPrereqs(ctx, set, obs)
	ob.readOwned(ctx)
	return obs, ctx.Err()
}

// LoadAll runs the objects' deferred reads, conc at a time, and returns
// the errors by address. A read's goroutine starts when a slot is free:
// one per object waiting on the slots was a goroutine stack and more per
// guest, ~100 MB of a 50,000-VM plan (docs/performance.md).
func LoadAll(ctx context.Context, objs map[string]*LiveObj, conc int) map[string]error {
	var (
		mu   sync.Mutex
		errs = map[string]error{}
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, conc)
	for _, addr := range slices.Sorted(maps.Keys(objs)) {
		lo := objs[addr]
		if lo.Load == nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := lo.Load(ctx)
			lo.Load = nil
			if err != nil {
				mu.Lock()
				errs[addr] = fmt.Errorf("%s: %w", addr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs
}

func openConn(ctx context.Context, clients Clients, set *spec.Set, name string, conc int) (*LiveConn, error) {
	label := connLabel(name)
	cl, err := clients.Client(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	lc := &LiveConn{Name: name, Client: cl, Networks: map[string]*LiveNetwork{}, ReadConc: conc}
	if set != nil && set.Connections[name] != nil {
		lc.Settings = set.Connections[name]
	} else {
		lc.Settings = clients.Connection(name)
	}
	// The three lists do not depend on each other: they go out at once, so
	// a plan pays one round trip for them, not three.
	var permsErr, resErr, nodesErr error
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); lc.Perms, permsErr = cl.Permissions(ctx) }()
	go func() { defer wg.Done(); lc.Resources, resErr = cl.ClusterResources(ctx, "") }()
	go func() { defer wg.Done(); lc.Nodes, nodesErr = cl.NodeNames(ctx) }()
	wg.Wait()
	switch {
	case permsErr != nil:
		return nil, fmt.Errorf("%s: %w", label, permsErr)
	case resErr != nil:
		return nil, fmt.Errorf("%s: read cluster resources: %w", label, resErr)
	case nodesErr != nil:
		return nil, fmt.Errorf("%s: list nodes: %w", label, nodesErr)
	}
	sort.Strings(lc.Nodes)
	lc.noteDownNodes()
	return lc, nil
}

// Node resolves where r lives: the node its spec names, else the
// connection's first configured node, else the cluster's first node.
func (lc *LiveConn) Node(r *spec.Resource) (string, error) {
	n := ParamNode(r)
	if n == "" && lc.Settings != nil && len(lc.Settings.Nodes) > 0 {
		n = lc.Settings.Nodes[0]
	}
	if n == "" && len(lc.Nodes) > 0 {
		n = lc.Nodes[0]
	}
	if n == "" {
		return "", errors.New("no node: the cluster lists none")
	}
	if !lc.HasNode(n) {
		return "", fmt.Errorf("node %q is not in the cluster (nodes: %s)", n, strings.Join(lc.Nodes, ", "))
	}
	return n, nil
}

func (lc *LiveConn) HasNode(n string) bool {
	i := sort.SearchStrings(lc.Nodes, n)
	return i < len(lc.Nodes) && lc.Nodes[i] == n
}

// Network reads a node's staged interfaces once.
func (lc *LiveConn) Network(ctx context.Context, node string) (*LiveNetwork, error) {
	if ln, ok := lc.Networks[node]; ok {
		return ln, nil
	}
	ifaces, changes, err := lc.Client.NetworkList(ctx, node)
	if err != nil {
		return nil, fmt.Errorf("list network of node %s: %w", node, err)
	}
	ln := &LiveNetwork{Ifaces: ifaces, Changes: changes}
	lc.Networks[node] = ln
	return ln, nil
}

func (ln *LiveNetwork) Iface(name string) *pve.Config {
	for _, c := range ln.Ifaces {
		if c.Get("iface") == name {
			return c
		}
	}
	return nil
}

// PoolList reads /pools once.
func (lc *LiveConn) PoolList(ctx context.Context) ([]pve.Pool, error) {
	return readOnce(&lc.poolsRead, &lc.pools, func() ([]pve.Pool, error) {
		pools, err := lc.Client.Pools(ctx)
		if err != nil {
			return nil, fmt.Errorf("list pools: %w", err)
		}
		return pools, nil
	})
}

// Fingerprint is pvectl's hash of a live object for Verify: its fields
// without PVE's digest and without what pvectl writes itself (the
// description's blocks), so that provisioning a guest between `plan --out`
// and `apply FILE` does not make the saved plan stale. "" when absent.
func Fingerprint(lo *LiveObj) string {
	if lo == nil || !lo.Exists {
		return ""
	}
	cfg := lo.Config
	if d, ok := cfg.Lookup("description"); ok {
		cfg = cfg.Clone()
		cfg.Set("description", marks.UserDescription(d))
	}
	return FieldsDigest(cfg)
}

// FieldsDigest fingerprints objects PVE gives no digest for. Fields that
// flip by themselves (active after a commit) are left out, and so is an
// interface's priority: its position in the file, which moves when
// another interface is added before it.
func FieldsDigest(cfg *pve.Config) string {
	h := sha1.New()
	for k, v := range cfg.All() {
		switch k {
		case "active", "exists", "digest", "priority", "altnames":
			continue
		}
		fmt.Fprintf(h, "%s=%s\n", k, v)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// observer reads resources' live objects for ObserveWith.
type observer struct {
	obs     *Observed
	clients Clients
	set     *spec.Set
	conc    int
	connErr map[string]error // by connection: why it could not be opened
}

// Observe reads r's live object into obs; the error is only ctx's.
func (ob *observer) Observe(ctx context.Context, r *spec.Resource) error {
	obs, clients, set, conc, connErr := ob.obs, ob.clients, ob.set, ob.conc, ob.connErr
	if err := ctx.Err(); err != nil {
		return err
	}
	k, err := KindOf(r.Kind)
	if err != nil {
		obs.Errs[r.Address()] = fmt.Errorf("%s: %w", r.Address(), err)
		return nil
	}
	lc, ok := obs.Conns[r.Connection]
	if !ok {
		if err, failed := connErr[r.Connection]; failed {
			obs.Errs[r.Address()] = err
			return nil
		}
		lc, err = openConn(ctx, clients, set, r.Connection, conc)
		if err != nil {
			// A connection that cannot be read fails every resource on
			// it for the same reason: Build says it once.
			connErr[r.Connection] = err
			obs.Errs[r.Address()] = err
			return nil
		}
		obs.Conns[r.Connection] = lc
	}
	// What is on a node that is down cannot be read, nor changed.
	if why := lc.downReason(r); why != "" {
		obs.unknown[r.Address()] = why
		return nil
	}
	// PVE's lists hide what the token may not audit: a read without the
	// privileges would look like a missing object.
	if needs, ok := ReadNeeds(k, r); ok {
		needs = rewriteNeeds(set, lc, r.Connection, needs)
		if err := lc.checkPerms(r.Address(), needs); err != nil {
			obs.Errs[r.Address()] = err
			return nil
		}
	}
	lo, err := k.Observe(ctx, lc, r)
	var ue *unknownError
	if err = lc.asUnknown(r, err); errors.As(err, &ue) {
		obs.unknown[r.Address()] = ue.reason
		return nil
	}
	if err != nil {
		obs.Errs[r.Address()] = fmt.Errorf("%s: %w", r.Address(), err)
		return nil
	}
	obs.Objs[r.Address()] = lo
	return nil
}

// loadAll runs the deferred reads of objs (obs's), moving what failed to
// errs or unknown.
func (ob *observer) loadAll(ctx context.Context, objs map[string]*LiveObj) {
	obs := ob.obs
	for addr, err := range LoadAll(ctx, objs, ob.conc) {
		if IsUnreachable(err) {
			obs.unknown[addr] = fmt.Sprintf("on node %s, %s", obs.Objs[addr].Node, UnreachableWhy(err))
		} else {
			obs.Errs[addr] = err
		}
		delete(obs.Objs, addr)
	}
}

// waitsFor reports whether r names the output of a resource in waiting.
func waitsFor(r *spec.Resource, waiting map[string]bool) bool {
	for addr := range outputTargets(r) {
		if waiting[addr] {
			return true
		}
	}
	return false
}

// KeptValue is what a kind kept under key on lc (nil: nothing yet).
func (lc *LiveConn) KeptValue(key string) any { return lc.kept[key] }

// Keep keeps v under key on lc for the kind that read it.
func (lc *LiveConn) Keep(key string, v any) {
	if lc.kept == nil {
		lc.kept = map[string]any{}
	}
	lc.kept[key] = v
}
