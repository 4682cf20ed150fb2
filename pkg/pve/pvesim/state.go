package pvesim

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

const stateVersion = 1

// state is everything the simulated cluster remembers; it is what the state
// file holds. Tasks and locks are not part of it: a restart drops them.
type state struct {
	Version  int                 `json:"version"`
	Nodes    []string            `json:"nodes"`
	VMs      map[int]*vm         `json:"vms"`
	Storages map[string]*storage `json:"storages"`
	// Priv is /etc/pve/priv/storage: the secrets storages keep apart from
	// storage.cfg (passwords, keyrings, keys), by storage and option, as
	// SHA-256 digests only — the API never shows them.
	Priv    map[string]map[string]string `json:"priv,omitempty"`
	Volumes map[string]*volume           `json:"volumes"` // by volid
	Pools   map[string]*pool             `json:"pools"`
	Net     map[string]*nodeNet          `json:"network"` // by node
	DNS     map[string]*dnsConf          `json:"dns"`     // by node
	Boot    map[string]int64             `json:"boot"`    // node boot time (unix)
	Access  *access                      `json:"access"`
	// PCIMappings is mapping/pci.cfg: the cluster's PCI resource
	// mappings by id (mapping.go).
	PCIMappings map[string]*pciMapping `json:"pci_mappings,omitempty"`
	// USBMappings and DirMappings are mapping/usb.cfg and
	// mapping/directory.cfg (mapping_usbdir.go).
	USBMappings map[string]*devMapping `json:"usb_mappings,omitempty"`
	DirMappings map[string]*devMapping `json:"dir_mappings,omitempty"`
	// Domains is domains.cfg (domains.go); nil until first used.
	Domains *domains `json:"domains,omitempty"`
	// Firewall holds the firewall's files by path below /etc/pve
	// (cluster.fw, nodes/N/host.fw, firewall/VMID.fw): their text, as
	// pmxcfs keeps it (firewall_conf.go).
	Firewall map[string]string `json:"firewall,omitempty"`

	// SDN is /etc/pve/sdn and what the nodes generated from it (sdn.go).
	SDN *sdnState `json:"sdn,omitempty"`

	// Datacenter is datacenter.cfg as written (dcoptions.go).
	Datacenter map[string]string `json:"datacenter,omitempty"`
	// MetricServers is status.cfg, MetricTokens the stored tokens'
	// digests by server (metricserver.go).
	MetricServers sections          `json:"metric_servers,omitempty"`
	MetricTokens  map[string]string `json:"metric_tokens,omitempty"`
	// RealmSyncJobs are jobs.cfg's realm-sync sections (realmsync.go).
	RealmSyncJobs sections `json:"realm_sync_jobs,omitempty"`

	// HA is the HA manager's resources.cfg and rules.cfg (ha.go).
	HA *haConfig `json:"ha,omitempty"`
	// Jobs is jobs.cfg's vzdump jobs and replication.cfg (backup.go,
	// replication.go).
	Jobs *jobsConfig `json:"jobs,omitempty"`
}

// vm is a guest: a QEMU VM, or a container when Type is "lxc".
type vm struct {
	VMID    int               `json:"vmid"`
	Type    string            `json:"type,omitempty"` // "" (qemu) | "lxc"
	Node    string            `json:"node"`
	Conf    map[string]string `json:"conf"`
	Pending map[string]string `json:"pending,omitempty"`
	// PendingDel is the [PENDING] section's delete list as PVE writes it:
	// keys, a forced removal prefixed with "!" (pve-guest-common
	// AbstractConfig.pm print_pending_delete).
	PendingDel []string `json:"pending_delete,omitempty"`
	// CloudInit is a VM's [special:cloudinit] section: the values the
	// current cloud-init image was made from where they changed since,
	// and "added" (qemu-server QemuServer.pm vmconfig_hotplug_pending).
	CloudInit map[string]string `json:"cloudinit,omitempty"`
	// Snapshots are the config file's snapshot sections by name: the
	// copied config keys with snaptime, description, parent, vmstate and
	// snapstate (snapshot.go).
	Snapshots map[string]map[string]string `json:"snapshots,omitempty"`
	Running   bool                         `json:"running,omitempty"`
	StartedAt int64                        `json:"started_at,omitempty"`
	// agentAt is when the guest agent answers after a boot (not persisted:
	// after a restart of the simulator the agent is up at once).
	agentAt time.Time
}

type storage struct {
	ID       string   `json:"storage"`
	Type     string   `json:"type"`
	Content  []string `json:"content"`
	Path     string   `json:"path,omitempty"`
	VGName   string   `json:"vgname,omitempty"`
	ThinPool string   `json:"thinpool,omitempty"`
	Shared   bool     `json:"shared,omitempty"`
	Nodes    []string `json:"nodes,omitempty"` // empty: all nodes
	Disable  bool     `json:"disable,omitempty"`
	Total    int64    `json:"total"`
	// Extra holds the other storage.cfg keys (server, export, pool…).
	// Secrets (passwords, keys) are not here: see state.Priv.
	Extra map[string]string `json:"extra,omitempty"`
}

func (st *storage) allows(content string) bool {
	for _, c := range st.Content {
		if c == content {
			return true
		}
	}
	return false
}

func (st *storage) onNode(node string) bool {
	if len(st.Nodes) == 0 {
		return true
	}
	for _, n := range st.Nodes {
		if n == node {
			return true
		}
	}
	return false
}

// volume is one volume on a storage. Local storages hold per-node volumes,
// but the simulator keeps one namespace per storage id: volume names carry
// the vmid, and vmids are cluster-unique.
type volume struct {
	Storage string `json:"storage"`
	Name    string `json:"name"` // "vm-100-disk-0", "iso/x.iso", "base-9000-disk-0/vm-101-disk-0"
	Content string `json:"content"`
	Format  string `json:"format"`
	Size    int64  `json:"size"`
	VMID    int    `json:"vmid,omitempty"`
	Parent  string `json:"parent,omitempty"`
	Ctime   int64  `json:"ctime"`
	Notes   string `json:"notes,omitempty"`
	Protect bool   `json:"protected,omitempty"`
	// Sums are the file's checksums by algorithm, where the simulator
	// knows them (uploads, downloads); see volume.checksum.
	Sums map[string]string `json:"sums,omitempty"`
}

func (v *volume) volid() string { return v.Storage + ":" + v.Name }

type pool struct {
	ID       string   `json:"poolid"`
	Comment  string   `json:"comment,omitempty"`
	VMs      []int    `json:"vms,omitempty"`
	Storages []string `json:"storages,omitempty"`
}

type dnsConf struct {
	Search string `json:"search,omitempty"`
	DNS1   string `json:"dns1,omitempty"`
	DNS2   string `json:"dns2,omitempty"`
	DNS3   string `json:"dns3,omitempty"`
}

// ensure is the value *p points at, a zero one made first where *p is nil.
func ensure[T any](p **T) *T {
	if *p == nil {
		*p = new(T)
	}
	return *p
}

// ensureMap is the map *p, made empty first where it is nil.
func ensureMap[M ~map[K]V, K comparable, V any](p *M) M {
	if *p == nil {
		*p = M{}
	}
	return *p
}

func (st *state) hasNode(n string) bool {
	for _, x := range st.Nodes {
		if x == n {
			return true
		}
	}
	return false
}

// ensureNodes adds seed data for nodes named in Options but missing from a
// loaded state file.
func (st *state) ensureNodes(nodes []string, s *Server) {
	for _, n := range nodes {
		if st.hasNode(n) {
			continue
		}
		st.Nodes = append(st.Nodes, n)
		st.Net[n] = seedNetwork()
		st.DNS[n] = &dnsConf{Search: "local", DNS1: "192.168.100.1"}
		st.Boot[n] = st.Boot[st.Nodes[0]]
	}
}

// vmPool returns the pool a VM belongs to, or "".
func (st *state) vmPool(vmid int) string {
	for _, p := range st.Pools {
		for _, id := range p.VMs {
			if id == vmid {
				return p.ID
			}
		}
	}
	return ""
}

func (st *state) removeFromPools(vmid int) {
	for _, p := range st.Pools {
		p.VMs = removeValue(p.VMs, vmid)
	}
}

// removeValue drops every x from xs, in place.
func removeValue[T comparable](xs []T, x T) []T {
	out := xs[:0]
	for _, v := range xs {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

func (st *state) vmIDs() []int {
	ids := make([]int, 0, len(st.VMs))
	for id := range st.VMs {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// volumesOf lists the volumes owned by a VM, sorted by volid.
func (st *state) volumesOf(vmid int) []*volume {
	var out []*volume
	for _, k := range slices.Sorted(maps.Keys(st.Volumes)) {
		if v := st.Volumes[k]; v.VMID == vmid {
			out = append(out, v)
		}
	}
	return out
}

// volumeInUseAsBase reports whether a linked clone names volid as its
// base, as pve-storage src/PVE/Storage.pm volume_is_base_and_used finds
// it: among the storage's images, one whose name carries the base
// ("9000/base-9000-disk-0.qcow2/101/vm-101-disk-0.qcow2" on a file
// storage, "base-9000-disk-0/vm-101-disk-0" on ZFS or RBD). An LVM-thin
// clone is a thin snapshot named like any disk: PVE does not see it, and
// lets its base go (src/PVE/Storage/LvmThinPlugin.pm, the note at the top;
// the snapshot keeps its data).
func (st *state) volumeInUseAsBase(volid string) bool {
	sid, name, ok := strings.Cut(volid, ":")
	if !ok {
		return false
	}
	for _, o := range st.Volumes {
		if o.Storage == sid && strings.HasPrefix(o.Name, name+"/") {
			return true
		}
	}
	return false
}

func loadState(path string) (*state, error) {
	// A write a kill interrupted leaves its temporary file (writeAtomic);
	// the state file itself is whole.
	if tmps, err := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".*")); err == nil {
		for _, tmp := range tmps {
			os.Remove(tmp)
		}
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pvesim: read state: %w", err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("pvesim: parse state %s: %w", path, err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("pvesim: state %s has version %d, want %d", path, st.Version, stateVersion)
	}
	ensureMap(&st.VMs)
	for _, m := range []any{st.Storages, st.Volumes, st.Pools, st.Net, st.DNS, st.Boot} {
		if m == nil {
			return nil, fmt.Errorf("pvesim: state %s is incomplete", path)
		}
	}
	if st.Access == nil {
		return nil, fmt.Errorf("pvesim: state %s is incomplete", path)
	}
	// Tasks do not survive a restart: a guest whose create or clone never
	// finished is dropped with its volumes instead of lingering as a locked stub.
	for id, v := range st.VMs {
		if isStub(v.Conf) {
			for _, vol := range st.volumesOf(id) {
				delete(st.Volumes, vol.volid())
			}
			st.removeFromPools(id)
			delete(st.VMs, id)
		}
	}
	return &st, nil
}

// isStub reports whether conf is what a create or clone writes before its
// worker has done its work: only the lock (and qemu-server's clone adds
// its temporary file's comment, which reads back as the description).
func isStub(conf map[string]string) bool {
	switch conf["lock"] {
	case "create":
		return len(conf) == 1
	case "clone":
		return len(conf) == 1 || len(conf) == 2 && conf["description"] == cloneTempDescription
	}
	return false
}

// The state file. Rewriting the whole file per change made a state file
// of thousands of guests quadratic (170 s to create 2,000 VMs against 16 s
// without). So one writer (saveLoop) writes the changes in batches: after
// a write it pauses stateWritePause times as long as the snapshot held
// the lock (at least stateWriteMin), so the writer never holds the state
// more than a sixth of the time, and everything changed meanwhile makes
// the next write. Every write is atomic (a temporary file, fsync, rename,
// fsync of the directory): a kill leaves the previous file or the next,
// never a torn one, and loses at most the changes of the last pause and
// write (a graceful Close writes everything). The simulator knowingly
// differs from PVE here: pmxcfs commits each write before the call
// answers (docs/simulator.md).
const (
	stateWritePause = 5
	stateWriteMin   = 20 * time.Millisecond
)

// saveLocked (under s.mu) records that the state changed: the writer
// picks it up with whatever else changed meanwhile.
func (s *Server) saveLocked() error {
	if s.opts.StateFile == "" {
		return nil
	}
	s.saveSeq++
	select {
	case s.saveKick <- struct{}{}:
	default: // a kick is pending already
	}
	return nil
}

// flushLocked (under s.mu) writes the state now: at start (a state file
// that cannot be written is an error then, not a silent loss later) and
// at Close.
func (s *Server) flushLocked() error {
	if s.opts.StateFile == "" {
		return nil
	}
	b, err := json.Marshal(s.st)
	if err != nil {
		return fmt.Errorf("pvesim: encode state: %w", err)
	}
	return s.writeState(b, s.saveSeq)
}

// writeState writes one snapshot, numbered seq, unless a newer one landed.
func (s *Server) writeState(b []byte, seq uint64) error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	if seq < s.savedSeq || (seq == s.savedSeq && s.savedOnce) {
		return nil
	}
	if err := writeAtomic(s.opts.StateFile, b); err != nil {
		s.logf("pvesim: save state: %v", err)
		return err
	}
	s.savedSeq, s.savedOnce = seq, true
	return nil
}

// saveLoop is the state file's writer: it snapshots the state under s.mu
// and writes it outside, then pauses so that the changes meanwhile make
// one write, until done is closed (Close writes the rest).
func (s *Server) saveLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.done:
			return
		case <-s.saveKick:
		}
		s.mu.Lock()
		held := time.Now()
		seq := s.saveSeq
		b, err := json.Marshal(s.st)
		pause := max(stateWritePause*time.Since(held), stateWriteMin)
		s.mu.Unlock()
		if err != nil {
			s.logf("pvesim: encode state: %v", err)
		} else {
			s.writeState(b, seq)
		}
		select {
		case <-s.done:
			return
		case <-time.After(pause):
		}
	}
}

func writeAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	// The rename itself is made durable by syncing the directory.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
